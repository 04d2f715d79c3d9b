#!/usr/bin/env python3
"""Assembles every PTX object of a `tbc compile --emit ptx` output with ptxas
and checks the result: no errors, no spill stores or loads in any kernel.
Prints one line per architecture and kernel count; exits non-zero on a
failure. Usage: check_ptx.py PTXAS FILE.mlir"""
import re, subprocess, sys, tempfile, os
from ptx_objects import ptx_objects

ptxas, path = sys.argv[1], sys.argv[2]
objects = ptx_objects(path)
if not objects:
    sys.exit(f"{path}: no PTX objects")
status = 0
for chip, ptx in objects:
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        open(src, "wb").write(ptx)
        out = subprocess.run([ptxas, f"-arch={chip}", "-v", src, "-o", os.path.join(d, "k.cubin")],
                             capture_output=True, text=True)
    log = out.stdout + out.stderr
    kernels = len(re.findall(r"Compiling entry function", log))
    spills = [l for l in log.splitlines() if "spill" in l and " 0 bytes spill stores, 0 bytes spill loads" not in l]
    if out.returncode != 0 or spills or kernels == 0:
        status = 1
        print(f"{chip}: FAIL\n{log}")
    else:
        print(f"{chip}: {kernels} kernels, 0 spills")
sys.exit(status)
