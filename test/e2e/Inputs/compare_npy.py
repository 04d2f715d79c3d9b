#!/usr/bin/env python3
"""compare_npy.py GOT.npy REF.npy TOLERANCE: logits [rows, vocab] against a
reference, overall (max|d| / max|ref|) and row by row (each row's max|d| over
its own max|ref|, so that a row of zeros or garbage cannot hide under the
others' scale). Prints one line; exits 1 when either is over TOLERANCE."""
import sys
import numpy as np

got, ref, tol = np.load(sys.argv[1]), np.load(sys.argv[2]), float(sys.argv[3])
if got.shape != ref.shape:
    sys.exit(f"shapes differ: {got.shape} against {ref.shape}")
got, ref = got.reshape(-1, got.shape[-1]), ref.reshape(-1, ref.shape[-1])
d = np.abs(got - ref)
overall = d.max() / np.abs(ref).max()
rows = (d.max(axis=1) / np.maximum(np.abs(ref).max(axis=1), 1e-30)).max()
ok = overall <= tol and rows <= tol
print(f"{len(ref)} rows: max|d|/max|ref| = {overall:.3g}, worst row max|d|/max|ref row| = {rows:.3g} "
      f"({'ok' if ok else 'FAIL'}, within {tol:g})")
sys.exit(0 if ok else 1)
