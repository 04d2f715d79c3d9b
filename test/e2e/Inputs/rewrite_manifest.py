#!/usr/bin/env python3
"""Rewrites a .tbcm's first kernel symbol and fixes the checksum, to test
that the runtime validates the manifest itself (not just the container)."""
import struct, sys

data = open(sys.argv[1], "rb").read()
magic, version, blobs, msize, _ = struct.unpack("<8sIIQQ", data[:32])
manifest = data[32:32 + msize].decode()
start = manifest.index('"symbol": "') + len('"symbol": "')
end = manifest.index('"', start)
manifest = manifest[:start] + "no_such_kernel_packed" + manifest[end:]
body = manifest.encode() + data[32 + msize:]
h = 1469598103934665603
for b in body:
    h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
open(sys.argv[2], "wb").write(struct.pack("<8sIIQQ", magic, version, blobs, len(manifest.encode()), h) + body)
