#!/usr/bin/env python3
"""Compares the instructions NVPTX selected for each target of a
`--tbc-gpu-module-to-binary` output compiled with a code generation per
target (share-codegen=false): every target's opcodes (`ld.global.v4.b16`,
`mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`, ...) counted over the
whole PTX must be the first target's, up to `slack` of each count (default
0.5 %: the scheduler may compute a predicate one way or another, and the two
code generations of Gemma-2's windowed, soft-capped flash kernel differ by 5
of its 106 `add.s64`, with `mul.wide.u32` and `cvt.u64.u32` trading places:
integer address arithmetic, the same on either chip). An opcode one target
has and the other lacks always fails. What the CUDA backend's
share-codegen rests on: PTX selected for sm_80 is what LLVM selects for sm_90.
Prints one line per target; exits non-zero when one differs.
Usage: compare_ptx_opcodes.py FILE.mlir [SLACK]"""
import collections, re, sys
from ptx_objects import ptx_objects

path = sys.argv[1]
slack = float(sys.argv[2]) if len(sys.argv) > 2 else 0.005


def opcodes(ptx):
    counts = collections.Counter()
    for line in ptx.decode().splitlines():
        s = line.strip()
        # Directives, comments, labels, braces: not instructions.
        if not s or s[0] in "./{}$" or s.endswith(":"):
            continue
        if s.startswith("@"):  # a guard predicate
            s = s.split(None, 1)[1]
        counts[s.split()[0].rstrip(";")] += 1
    return counts


objects = ptx_objects(path)
if len(objects) < 2:
    sys.exit(f"{path}: fewer than two PTX objects")
first_chip, first = objects[0][0], opcodes(objects[0][1])
status = 0
for chip, ptx in objects[1:]:
    other = opcodes(ptx)
    differ = {op: (first[op], other[op]) for op in first.keys() | other.keys()
              if abs(first[op] - other[op]) > slack * max(first[op], other[op])
              and (first[op] == 0 or other[op] == 0 or abs(first[op] - other[op]) > 2)}
    total = sum(other.values())
    if differ:
        status = 1
        print(f"{chip}: DIFFERS from {first_chip} in {len(differ)} opcodes: "
              + ", ".join(f"{op} {a} vs {b}" for op, (a, b) in sorted(differ.items())))
    else:
        print(f"{chip}: the opcodes of {first_chip} ({total} instructions)")
sys.exit(status)
