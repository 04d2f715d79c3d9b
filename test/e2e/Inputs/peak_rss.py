#!/usr/bin/env python3
"""Runs a baseline command and a measured command and checks the measured
one's peak resident memory: at most BASELINE + FACTOR x the size of FILE.

    peak_rss.py FILE FACTOR BASELINE_CMD... -- MEASURED_CMD...

Prints both peaks and the ratio; exits 1 when over the limit (or when a
command fails). Peaks come from wait4's rusage (ru_maxrss, KiB on Linux).
"""
import os
import subprocess
import sys


def peak_kib(cmd):
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"peak_rss.py: {' '.join(cmd)} failed")
    return usage.ru_maxrss


path, factor = sys.argv[1], float(sys.argv[2])
split = sys.argv.index("--")
baseline, measured = sys.argv[3:split], sys.argv[split + 1:]
size_mib = os.path.getsize(path) / 2**20
base_mib, peak_mib = peak_kib(baseline) / 1024, peak_kib(measured) / 1024
ratio = (peak_mib - base_mib) / size_mib
print(f"checkpoint {size_mib:.0f} MiB; peak RSS {peak_mib:.0f} MiB, baseline {base_mib:.0f} MiB: "
      f"{ratio:.2f} x the checkpoint (limit {factor})")
sys.exit(0 if ratio <= factor else 1)
