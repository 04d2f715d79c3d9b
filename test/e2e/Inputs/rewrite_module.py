#!/usr/bin/env python3
"""Rewrites part of a .tbcm and fixes the checksum, to test that the runtime
validates what the container holds (not just the container):
  rewrite_module.py IN OUT symbol            first kernel symbol -> no_such_kernel_packed
  rewrite_module.py IN OUT blob NAME TEXT    the blob NAME's bytes -> TEXT
  rewrite_module.py IN OUT blob-edit NAME OLD NEW
                                             first OLD in the blob NAME -> NEW
  rewrite_module.py IN OUT manifest OLD NEW [OLD NEW ...]
                                             first OLD in the manifest -> NEW
  rewrite_module.py IN OUT json STATEMENT    runs STATEMENT on the manifest
                                             parsed as `m` (m['steps'] = [])
  rewrite_module.py IN OUT drop NAME         removes the blob NAME
  rewrite_module.py IN OUT clobber-wgmma NAME
                                             after the blob NAME's first
                                             wgmma commit_group, writes 7 to
                                             the first accumulator of the
                                             wgmma before it (still in flight)"""
import json, struct, sys

src, dst, mode = sys.argv[1:4]
data = open(src, "rb").read()
magic, version, count, msize, _ = struct.unpack("<8sIIQQ", data[:32])
manifest = data[32:32 + msize].decode()
blobs, at = [], 32 + msize
for _ in range(count):
    (n,) = struct.unpack("<Q", data[at:at + 8]); name = data[at + 8:at + 8 + n].decode(); at += 8 + n
    (s,) = struct.unpack("<Q", data[at:at + 8]); blobs.append([name, data[at + 8:at + 8 + s]]); at += 8 + s

if mode == "symbol":
    start = manifest.index('"symbol": "') + len('"symbol": "')
    end = manifest.index('"', start)
    manifest = manifest[:start] + "no_such_kernel_packed" + manifest[end:]
elif mode == "blob":
    for b in blobs:
        if b[0] == sys.argv[4]:
            b[1] = sys.argv[5].encode()
elif mode == "blob-edit":
    for b in blobs:
        if b[0] == sys.argv[4]:
            if sys.argv[5].encode() not in b[1]:
                sys.exit("not in the blob: " + sys.argv[5])
            b[1] = b[1].replace(sys.argv[5].encode(), sys.argv[6].encode(), 1)
elif mode == "manifest":
    edits = sys.argv[4:]
    for old, new in zip(edits[::2], edits[1::2]):
        if old not in manifest:
            sys.exit("not in the manifest: " + old)
        manifest = manifest.replace(old, new, 1)
elif mode == "json":
    m = json.loads(manifest)
    exec(sys.argv[4])
    manifest = json.dumps(m, indent=1)
elif mode == "drop":
    blobs = [b for b in blobs if b[0] != sys.argv[4]]
elif mode == "clobber-wgmma":
    import re
    for b in blobs:
        if b[0] == sys.argv[4]:
            commit = b[1].index(b"wgmma.commit_group.sync.aligned;")
            acc = re.findall(rb"wgmma\.mma_async[^{]*\{\s*(%r\d+)", b[1][:commit])[-1]
            end = commit + len(b"wgmma.commit_group.sync.aligned;")
            b[1] = b[1][:end] + b"\n\tmov.b32 \t" + acc + b", 7;" + b[1][end:]
else:
    sys.exit("unknown mode " + mode)

body = manifest.encode()
for name, content in blobs:
    body += struct.pack("<Q", len(name)) + name.encode() + struct.pack("<Q", len(content)) + content
h = 1469598103934665603
for b in body:
    h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
open(dst, "wb").write(struct.pack("<8sIIQQ", magic, version, len(blobs), len(manifest.encode()), h) + body)
