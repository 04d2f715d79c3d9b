#!/usr/bin/env python3
"""Drives the PTX emulator in a fake libcuda.so.1 directly (ctypes) with a
kernel that reads 4 bytes at p + off, p a 16-byte device allocation, and
prints what each offset does: in bounds and aligned runs, the others fail.
Usage: emulator_faults.py LIBCUDA"""
import ctypes, sys

PTX = b"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry peek(
\t.param .u64 peek_param_0,
\t.param .u64 peek_param_1
)
{
\t.reg .b32 %r<2>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [peek_param_0];
\tld.param.u64 %rd2, [peek_param_1];
\tadd.s64 %rd3, %rd1, %rd2;
\tld.global.u32 %r1, [%rd3];
\tst.global.u32 [%rd1], %r1;
\tret;
}
"""

lib = ctypes.CDLL(sys.argv[1])
lib.ptx_emulator_load.restype = ctypes.c_void_p
lib.ptx_emulator_function.restype = ctypes.c_void_p
error = ctypes.c_char_p()
module = lib.ptx_emulator_load(PTX, ctypes.byref(error))
if not module:
    sys.exit("load failed: " + error.value.decode())
fn = lib.ptx_emulator_function(ctypes.c_void_p(module), b"peek")
base = ctypes.c_uint64()
assert lib.cuMemAlloc_v2(ctypes.byref(base), ctypes.c_size_t(16)) == 0
one = (ctypes.c_uint * 3)(1, 1, 1)
for off in [12, 2, 16]:
    p, o = ctypes.c_uint64(base.value), ctypes.c_uint64(off)
    params = (ctypes.c_void_p * 2)(ctypes.addressof(p), ctypes.addressof(o))
    rc = lib.ptx_emulator_launch(ctypes.c_void_p(module), ctypes.c_void_p(fn), one, one, params,
                                 ctypes.byref(error))
    print(f"offset {off}:", "ok" if rc == 0 else error.value.decode())
