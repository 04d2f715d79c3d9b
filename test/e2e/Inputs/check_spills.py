#!/usr/bin/env python3
"""check_spills.py MODULE.tbcm: disassembles the module's host code (objdump)
and, for every projection kernel (k<N>_linear, k<N>_fused_linear), counts
stack accesses of vector registers inside its FMA loops: the stretches where
vfmadd (or, with --cpu-dot bf16, vdpbf16ps) instructions follow each other
(at most 8 instructions apart), i.e. the register tile's k loop. A tile that
fits the register file has none. Prints one line: the kernels checked, the
spills found and how many kernels multiply with vdpbf16ps and how many with
AMX's tdpbf16ps (--cpu-dot amx); then a line for the attention kernels
(k<N>_attention): how many, the spills in their FMA loops (the register
tiles' score and value loops, and the one-row kernel's), and how many with
tdpbf16ps."""
import re, struct, subprocess, sys, tempfile

data = open(sys.argv[1], "rb").read()
_, _, nblobs, msize, _ = struct.unpack("<8sIIQQ", data[:32])
at, so = 32 + msize, None
for _ in range(nblobs):
    (n,) = struct.unpack("<Q", data[at:at + 8]); at += 8
    name = data[at:at + n].decode(); at += n
    (size,) = struct.unpack("<Q", data[at:at + 8]); at += 8
    if name == "host.so":
        so = data[at:at + size]
    at += size
if so is None:
    sys.exit("no host.so in the module")
with tempfile.NamedTemporaryFile(suffix=".so") as f:
    f.write(so); f.flush()
    asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f.name], capture_output=True,
                         text=True, check=True).stdout
kernels, spills, dots, tiles, current, lines = 0, 0, 0, 0, None, []
attention_spills = 0

def fma_loop_spills(lines):
    fma = [i for i, l in enumerate(lines) if "vfmadd" in l or "vdpbf16ps" in l]
    spill = re.compile(r"%[xyz]mm\d+,.*\(%rsp\)|\(%rsp\).*,%[xyz]mm\d+")
    start, found = None, 0
    for a, b in zip(fma, fma[1:] + [None]):
        start = a if start is None else start
        if b is None or b - a > 8:  # the end of an FMA stretch
            found += sum(1 for l in lines[start:a + 1] if spill.search(l))
            start = None
    return found

def finish():
    global spills, dots, tiles, attention_spills
    if re.fullmatch(r"k\d+_attention", current):
        attention_spills += fma_loop_spills(lines)
        return
    spills += fma_loop_spills(lines)
    dots += any("vdpbf16ps" in l for l in lines)
    tiles += any(re.search(r"\btdpbf16ps\b", l) for l in lines)

attentions, attention_tiles, in_attention = 0, 0, False
for line in asm.splitlines():
    m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
    if m:
        in_attention = re.fullmatch(r"k\d+_attention", m.group(1)) is not None
        attentions += in_attention
        if current:
            finish()
        current = m.group(1) if re.fullmatch(r"k\d+_((fused_)?linear|attention)", m.group(1)) else None
        kernels += 1 if current and not in_attention else 0
        lines = []
    elif current:
        lines.append(line)
    if in_attention and re.search(r"\btdpbf16ps\b", line) and attention_tiles < attentions:
        attention_tiles += 1
if current:
    finish()
print(f"{kernels} projection kernels, {spills} vector spills in their FMA loops, "
      f"{dots} with vdpbf16ps, {tiles} with tdpbf16ps")
print(f"{attentions} attention kernels, {attention_spills} vector spills in their FMA loops, "
      f"{attention_tiles} with tdpbf16ps")
