#!/usr/bin/env python3
"""Drives the PTX emulator in a fake libcuda.so.1 directly (ctypes) with a
kernel that reads 4 bytes at p + off, p a 16-byte device allocation, and
prints what each offset does: in bounds and aligned runs, the others fail.
Then a kernel that copies p's 16 bytes by cp.async into its dynamic shared
memory at `off` and reads the first word back before and after waiting for
the copy, for launches with 32 bytes of it: the copy lands at the wait, and
one past the launch's shared memory fails. Then a warpgroup's wgmma with A in
registers (m64n8k16, B zeros in shared memory) whose A registers are written
before its wait_group when the offset is not 0: that fails. Then a kernel that
prefetches p + off and waits for its predecessors (griddepcontrol.wait): a
prefetch outside every allocation fails, and so does a load before the wait.
Usage: emulator_faults.py LIBCUDA"""
import ctypes, sys


def kernel(name, body):
    """A PTX module of one kernel `name` taking two u64 parameters (the
    device pointer p, the offset) and loading them to %rd1 and %rd2."""
    return f"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry {name}(
\t.param .u64 {name}_param_0,
\t.param .u64 {name}_param_1
)
{{
\t.reg .b32 %r<3>;
\t.reg .b64 %rd<5>;
\tld.param.u64 %rd1, [{name}_param_0];
\tld.param.u64 %rd2, [{name}_param_1];
{body}
\tret;
}}
""".encode()


PTX = kernel("peek", """\tadd.s64 %rd3, %rd1, %rd2;
\tld.global.u32 %r1, [%rd3];
\tst.global.u32 [%rd1], %r1;""")

COPY = kernel("copy", """\t.shared .align 16 .b8 __dynamic_shmem__0;
\tmov.b64 %rd3, __dynamic_shmem__0;
\tadd.s64 %rd4, %rd3, %rd2;
\tcp.async.cg.shared.global [%rd4], [%rd1], 16;
\tcp.async.commit_group;
\tld.shared.u32 %r1, [%rd4];
\tcp.async.wait_group 0;
\tld.shared.u32 %r2, [%rd4];
\tst.global.u32 [%rd1], %r1;
\tst.global.u32 [%rd1+4], %r2;""")

# mov.b64's descriptor: start 0, leading byte offset 16, stride 1024, the
# 128-byte swizzle.
WGMMA = kernel("wgmma", """\t.reg .b32 %a<4>;
\t.reg .f32 %f<4>;
\t.reg .pred %q;
\tmov.b32 %a0, 0;
\tmov.b32 %a1, 0;
\tmov.b32 %a2, 0;
\tmov.b32 %a3, 0;
\tmov.f32 %f0, 0f00000000;
\tmov.f32 %f1, 0f00000000;
\tmov.f32 %f2, 0f00000000;
\tmov.f32 %f3, 0f00000000;
\tmov.b64 %rd3, 4611686293305360384;
\tsetp.ne.u64 %q, %rd2, 0;
\twgmma.fence.sync.aligned;
\t{
.reg .pred p;
setp.ne.b32 p, 1, 0;
wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f0, %f1, %f2, %f3}, {%a0, %a1, %a2, %a3}, %rd3, p, 1, 1, 0;
}
\twgmma.commit_group.sync.aligned;
\t@%q mov.b32 %a0, 5;
\twgmma.wait_group.sync.aligned 0;""")

# Programmatic dependent launch: a prefetch of p + off (in bounds at 0, not
# at 64), then at offset 8 a load before griddepcontrol.wait, which a kernel
# that may start before the one before it ends must not do.
DEPENDENT = kernel("dependent", """\t.reg .pred %q;
\tadd.s64 %rd3, %rd1, %rd2;
\tprefetch.global.L2 [%rd3];
\tsetp.eq.u64 %q, %rd2, 8;
\t@%q ld.global.u32 %r1, [%rd1];
\tgriddepcontrol.wait;
\tgriddepcontrol.launch_dependents;
\tld.global.u32 %r2, [%rd1];
\tst.global.u32 [%rd1+4], %r2;""")

lib = ctypes.CDLL(sys.argv[1])
lib.ptx_emulator_load.restype = ctypes.c_void_p
lib.ptx_emulator_function.restype = ctypes.c_void_p
error = ctypes.c_char_p()
base = ctypes.c_uint64()
assert lib.cuMemAlloc_v2(ctypes.byref(base), ctypes.c_size_t(16)) == 0
one = (ctypes.c_uint * 3)(1, 1, 1)


def function(ptx, name):
    """The emulated kernel `name` of the module `ptx`."""
    module = lib.ptx_emulator_load(ptx, ctypes.byref(error))
    if not module:
        sys.exit("load failed: " + error.value.decode())
    return module, lib.ptx_emulator_function(ctypes.c_void_p(module), name)


def launch(kernel, off, block=one, shared=0):
    """Runs `kernel` (function()) on (p, off) in one block: "ok" or the fault."""
    module, fn = kernel
    p, o = ctypes.c_uint64(base.value), ctypes.c_uint64(off)
    params = (ctypes.c_void_p * 2)(ctypes.addressof(p), ctypes.addressof(o))
    rc = lib.ptx_emulator_launch(ctypes.c_void_p(module), ctypes.c_void_p(fn), one, block,
                                 ctypes.c_uint(shared), params, ctypes.byref(error))
    return "ok" if rc == 0 else error.value.decode()


peek = function(PTX, b"peek")
for off in [12, 2, 16]:
    print(f"offset {off}:", launch(peek, off))

copy = function(COPY, b"copy")
words = (ctypes.c_uint32 * 4)()
for off in [16, 32]:
    words[:] = [7, 8, 9, 10]
    assert lib.cuMemcpyHtoD_v2(base, words, ctypes.c_size_t(16)) == 0
    result = launch(copy, off, shared=32)
    assert lib.cuMemcpyDtoH_v2(words, base, ctypes.c_size_t(16)) == 0
    print(f"cp.async to shared {off}:",
          f"before the wait {words[0]}, after {words[1]}" if result == "ok" else result)

wgmma = function(WGMMA, b"wgmma")
warpgroup = (ctypes.c_uint * 3)(128, 1, 1)
for off in [0, 1]:
    print(f"wgmma, A written in flight {off}:", launch(wgmma, off, warpgroup, 1024))

dependent = function(DEPENDENT, b"dependent")
for off in [0, 64, 8]:
    print(f"griddepcontrol, offset {off}:", launch(dependent, off))
