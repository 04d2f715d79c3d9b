#!/usr/bin/env python3
"""Prints the PTX of one architecture from a `tbc compile --target cuda --emit
ptx` output, for FileCheck. Usage: print_ptx.py FILE.mlir CHIP"""
import sys
from ptx_objects import ptx_objects

path, chip = sys.argv[1], sys.argv[2]
found = [ptx for c, ptx in ptx_objects(path) if c == chip]
if not found:
    sys.exit(f"{path}: no PTX for {chip}")
sys.stdout.write(found[0].decode())
