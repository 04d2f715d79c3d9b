#!/usr/bin/env python3
"""Assembles every PTX object of a `tbc compile --emit ptx` output with ptxas
and reads the machine code (cuobjdump -sass, or nvdisasm): for each
architecture, prints how many projection kernels (k<N>_linear,
k<N>_fused_linear: the variant for chunks of 16 rows and up, and
_tiles, the block-tiled one for 64 and up; the decoding variants, _row1 and
_rows8, are FMA GEMVs) and attention kernels
(k<N>_attention_attend, the split-KV kernel, _attend_decode and
_attend_combine, decoding's slices and their merge, and _attend_flash) hold
tensor-core instructions (HMMA; HGMMA, sm_90a's wgmma) and names the
projections that do not, how many of the block-tiled ones load their
fragments with ldmatrix (LDSM) and how many run wgmma (HGMMA, and its
shapes), how many flash kernels run on wgmma (and its shapes;
--cuda-flash-wgmma), the kernels whose wgmma ptxas serializes (its
performance infos C7514: a non-wgmma instruction reads an accumulator in
flight, and C7513: one writes an input register, such as a register A
operand, of a wgmma in flight; either way each wgmma waits for the last),
and the
local-memory accesses (STL/LDL: spills) inside the block-tiled kernels' k
walks, the loops around their tensor-core instructions, where a spill costs
every k step (one in a row tile's setup or epilogue costs once a tile).
Where kernels wait for their predecessors (--cuda-pdl: ACQBULK), a line
before that: how many do, how many before any global access, and how many
prefetch into L2 (CCTL.E.PF2) before it.
Usage: check_sass.py PTXAS CUOBJDUMP|NVDISASM FILE.mlir"""
import os, re, subprocess, sys, tempfile
from ptx_objects import ptx_objects

ptxas, disassembler, path = sys.argv[1:4]
nvdisasm = os.path.basename(disassembler).startswith("nvdisasm")
objects = ptx_objects(path)
if not objects:
    sys.exit(f"{path}: no PTX objects")


def k_walk_spills(f):
    """STL/LDL between the label a backward branch past the first tensor-core
    instruction jumps to (before that instruction) and that branch."""
    lines = f.splitlines()
    first = next((i for i, l in enumerate(lines) if re.search(r"\bH(G)?MMA\b", l)), None)
    if first is None:
        return 0
    labels = {m.group(1): i for i, l in enumerate(lines)
              if (m := re.match(r"(\.L_x_\d+):", l.strip()))}
    for j in range(first, len(lines)):
        m = re.search(r"BRA\s+`?\(?(\.L_x_\d+)", lines[j])
        if m and labels.get(m.group(1), len(lines)) < first:
            return sum(1 for l in lines[labels[m.group(1)]:j] if re.search(r"\b(STL|LDL)\b", l))
    sys.exit("a block-tiled kernel's tensor-core instructions are in no loop")


for chip, ptx in objects:
    with tempfile.TemporaryDirectory() as d:
        src, cubin = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        open(src, "wb").write(ptx)
        assembled = subprocess.run([ptxas, f"-arch={chip}", src, "-o", cubin], check=True,
                                   capture_output=True, text=True)
        serialized = sorted(set(re.findall(r"C751[34]\).*in the function '(\w+)'",
                                           assembled.stderr)))
        command = [disassembler, cubin] if nvdisasm else [disassembler, "-sass", cubin]
        sass = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    # One chunk per function: cuobjdump heads each with "Function : name",
    # nvdisasm with a ".text.name:" label.
    marker = r"\n\.text\.([\w.]+):" if nvdisasm else r"\n\s*Function : ([\w.]+)"
    parts = re.split(marker, sass)
    functions = list(zip(parts[1::2], parts[2::2]))
    projections, without, attention, flash, tiled, ldsm, hgmma, spills = 0, [], 0, 0, 0, 0, 0, 0
    shapes = set()  # of the HGMMA instructions
    flashKernels, flashWgmma, flashShapes = 0, 0, set()
    for name, f in functions:
        if re.fullmatch(r"k\d+_(fused_)?linear(_tiles)?", name):
            projections += 1
            if "HMMA" not in f and "HGMMA" not in f:
                without.append(name)
            if name.endswith("_tiles"):
                tiled += 1
                ldsm += "LDSM" in f
                hgmma += "HGMMA" in f
                shapes.update(re.findall(r"HGMMA\.(\d+x\d+x\d+)", f))
                spills += k_walk_spills(f)
        elif re.fullmatch(r"k\d+_attention_attend(_flash|_decode|_combine)?", name):
            attention += 1
            flash += "HMMA" in f or "HGMMA" in f
            if name.endswith("_flash"):
                flashKernels += 1
                flashWgmma += "HGMMA" in f
                flashShapes.update(re.findall(r"HGMMA\.(\d+x\d+x\d+)", f))
    # Programmatic dependent launch (--cuda-pdl): a kernel's wait (ACQBULK)
    # must come before its first global access (LDG, STG, LDGSTS, atomics),
    # and a decode projection's L2 prefetches (CCTL.E.PF2) before the wait.
    waiting = [(name, f) for name, f in functions if "ACQBULK" in f]
    if waiting:
        early, prefetching = [], 0
        for name, f in waiting:
            before = f[:f.index("ACQBULK")]
            if re.search(r"\b(LDG|STG|LDGSTS|ATOMG|RED)\b", before):
                early.append(name)
            prefetching += "CCTL.E.PF2" in before
        print(f"{chip}: {len(waiting)}/{len(functions)} kernels wait (ACQBULK), "
              f"{len(waiting) - len(early)} before any global access"
              + (f" (not: {', '.join(early)})" if early else "")
              + f", {prefetching} after L2 prefetches")
    print(f"{chip}: {projections - len(without)}/{projections} projection kernels use tensor cores"
          + (f" (not: {', '.join(without)})" if without else "")
          + f"; {ldsm}/{tiled} block-tiled ones read fragments with LDSM"
          + f"; {flash}/{attention} attention kernels"
          + f"; {hgmma}/{tiled} block-tiled ones on wgmma"
          + f" (HGMMA{''.join(' ' + s for s in sorted(shapes))})"
          + f"; {spills} spill accesses in their k walks"
          + f"; {flashWgmma}/{flashKernels} flash kernels on wgmma"
          + f" (HGMMA{''.join(' ' + s for s in sorted(flashShapes))})"
          + f"; {len(serialized)} with wgmma serialized"
          + (f" ({', '.join(serialized)})" if serialized else ""))
