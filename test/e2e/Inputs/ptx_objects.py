"""The PTX objects of a `tbc compile --target cuda --emit ptx` output: the
gpu.binary's `assembly` strings, unescaped, with the chip of their
#nvvm.target. Shared by check_ptx.py and check_sass.py."""
import re


def ptx_objects(path):
    """[(chip, ptx bytes)] of the file at `path`, in order."""
    text = open(path).read()
    found = re.findall(r'#nvvm\.target<[^>]*chip = "(\w+)"[^>]*>.*?assembly = "((?:[^"\\]|\\.)*)"',
                       text, re.S)
    return [(chip, re.sub(rb"\\([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]),
                          escaped.encode()).replace(b"\\\\", b"\\").replace(b'\\"', b'"'))
            for chip, escaped in found]
