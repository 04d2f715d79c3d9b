#!/usr/bin/env python3
"""Assembles every PTX object of a `tbc compile --emit ptx` output with ptxas
and checks the result: no errors, no spill stores or loads in any kernel.
Prints one line per architecture and kernel count; exits non-zero on a
failure. Usage: check_ptx.py PTXAS FILE.mlir [--seen FILE]

With --seen, a kernel that an earlier call with the same file assembled
cleanly for the same chip is not assembled again: the fixtures' modules share
most of their kernels (tiny shapes alike; fused and unfused alike but for the
norms), and ptxas was most of the PTX tests' time. A kernel is the same when
its text (its own name aside) and the module-level declarations it names
(constant tables, shared buffers, with their data) are the same; its register
allocation, and so its spills, depend on nothing else. Objects holding
device functions (.func) are assembled whole."""
import hashlib, os, re, subprocess, sys, tempfile
from ptx_objects import ptx_objects

ENTRY = re.compile(r"(?:\.visible |\.weak )?\.entry (\w+)")
DECLARED = re.compile(r"^\.(?:global|shared|const)\b.*?\b(\w+)\s*(?:\[|;)")


def split_entries(ptx):
    """(module-level text, [(name, entry text)]): an entry runs from its
    `.entry` line to the brace that closes its body (inline assembly opens
    blocks of its own; vector operands open and close on one line)."""
    head, entries, current, depth = [], [], None, 0
    for line in ptx.splitlines(keepends=True):
        if current is None:
            m = ENTRY.match(line)
            if m:
                current, depth = (m.group(1), [line]), 0
            else:
                head.append(line)
            continue
        current[1].append(line)
        code = line.split("//", 1)[0]
        opened = depth > 0 or "{" in code
        depth += code.count("{") - code.count("}")
        if opened and depth == 0:
            entries.append((current[0], "".join(current[1])))
            current = None
    if current is not None:
        raise ValueError(f"entry {current[0]} has no closing brace")
    return "".join(head), entries


def kernel_key(chip, head, name, text):
    used = sorted(line for line in head.splitlines()
                  if (m := DECLARED.match(line)) and re.search(rf"\b{m.group(1)}\b", text))
    body = text.replace(name, "KERNEL")
    return hashlib.sha256("\n".join([chip, *used, body]).encode()).hexdigest()


def assemble(chip, ptx):
    """ptxas's log and exit status for one PTX text."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        open(src, "w").write(ptx)
        out = subprocess.run([ptxas, f"-arch={chip}", "-v", src, "-o", os.path.join(d, "k.cubin")],
                             capture_output=True, text=True)
    return out.stdout + out.stderr, out.returncode


args = sys.argv[1:]
seen_path = None
if "--seen" in args:
    i = args.index("--seen")
    seen_path = args[i + 1]
    del args[i:i + 2]
ptxas, path = args
seen = set()
if seen_path and os.path.exists(seen_path):
    seen = set(open(seen_path).read().split())
objects = ptx_objects(path)
if not objects:
    sys.exit(f"{path}: no PTX objects")
status = 0
for chip, raw in objects:
    ptx = raw.decode()
    head, entries = split_entries(ptx)
    keys, fresh = [], [t for _, t in entries]
    if seen_path is not None and ".func" not in head:
        keys = [kernel_key(chip, head, n, t) for n, t in entries]
        fresh = [t for k, t in zip(keys, fresh) if k not in seen]
    log, rc = assemble(chip, head + "".join(fresh)) if fresh or not entries else ("", 0)
    assembled = len(re.findall(r"Compiling entry function", log))
    spills = [l for l in log.splitlines() if "spill" in l and " 0 bytes spill stores, 0 bytes spill loads" not in l]
    if rc != 0 or spills or assembled != len(fresh) or not entries:
        status = 1
        print(f"{chip}: FAIL\n{log}")
    else:
        print(f"{chip}: {len(entries)} kernels, 0 spills")
        new = [k for k in dict.fromkeys(keys) if k not in seen]
        if seen_path and new:
            seen.update(new)
            with open(seen_path, "a") as f:
                f.write("".join(k + "\n" for k in new))
sys.exit(status)
