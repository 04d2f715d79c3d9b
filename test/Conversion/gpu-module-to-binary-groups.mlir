// --tbc-gpu-module-to-binary=kernel-groups=N: a module's kernels compile in
// groups, each optimised once and generated for every target; a target's
// object is one PTX text, its groups' bodies after one header, the groups'
// own functions and globals renamed apart (the kernels keep their names).
// RUN: tbc-opt %s "--tbc-gpu-module-to-binary=kernel-groups=2" | FileCheck %s
// CHECK: gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_80", features = "+ptx80">, properties = {LLVMIRToISATimeInMs = {{[0-9]+}} : i64, O = 2 : i32}, assembly = "
// CHECK-SAME: .version 8.0\0A.target sm_80\0A.address_size 64
// CHECK-SAME: .func  (.param .b32 func_retval0) twice(
// CHECK-SAME: .visible .entry scale(
// CHECK-SAME: .func  (.param .b32 func_retval0) twice_g1(
// CHECK-SAME: .visible .entry negate(
// CHECK-SAME: #gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">
// CHECK-SAME: .target sm_90
// CHECK-SAME: .visible .entry scale(
// CHECK-SAME: .visible .entry negate(
// CHECK-NOT: gpu.module
//
// One header an object, and each object assembles as one module.
// RUN: tbc-opt %s "--tbc-gpu-module-to-binary=kernel-groups=2" -o %t.mlir
// RUN: grep -o "address_size" %t.mlir | wc -l | FileCheck %s --check-prefix=HEADERS
// HEADERS: {{^}}2{{$}}
// RUN: %if ptxas %{ python3 %S/../e2e/Inputs/check_ptx.py %ptxas %t.mlir | FileCheck %s --check-prefix=PTXAS %}
// PTXAS: sm_80: 2 kernels, 0 spills
// PTXAS: sm_90: 2 kernels, 0 spills
//
// More groups than kernels: a group per kernel. One group: nothing renamed.
// RUN: tbc-opt %s "--tbc-gpu-module-to-binary=kernel-groups=5" | FileCheck %s
// RUN: tbc-opt %s "--tbc-gpu-module-to-binary=kernel-groups=1" | FileCheck %s --check-prefix=ONE
// ONE-NOT: twice_g
//
// The groups' PTX is joined as text: other formats are refused.
// RUN: not tbc-opt %s "--tbc-gpu-module-to-binary=kernel-groups=2 format=bin" 2>&1 | FileCheck %s --check-prefix=FORMAT
// FORMAT: kernel-groups joins PTX texts: it needs format=isa
module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_80", features = "+ptx80">,
                       #nvvm.target<chip = "sm_90", features = "+ptx80">] {
    // Both kernels call it; each group gets a copy.
    llvm.func internal @twice(%x: f32) -> f32 attributes {no_inline} {
      %r = llvm.fadd %x, %x : f32
      llvm.return %r : f32
    }
    llvm.func @scale(%p: !llvm.ptr, %s: f32) attributes {gpu.kernel, nvvm.kernel} {
      %t = nvvm.read.ptx.sreg.tid.x : i32
      %q = llvm.getelementptr %p[%t] : (!llvm.ptr, i32) -> !llvm.ptr, f32
      %v = llvm.load %q : !llvm.ptr -> f32
      %w = llvm.call @twice(%v) : (f32) -> f32
      %r = llvm.fmul %w, %s : f32
      llvm.store %r, %q : f32, !llvm.ptr
      llvm.return
    }
    llvm.func @negate(%p: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      %t = nvvm.read.ptx.sreg.tid.x : i32
      %q = llvm.getelementptr %p[%t] : (!llvm.ptr, i32) -> !llvm.ptr, f32
      %v = llvm.load %q : !llvm.ptr -> f32
      %w = llvm.call @twice(%v) : (f32) -> f32
      %r = llvm.fneg %w : f32
      llvm.store %r, %q : f32, !llvm.ptr
      llvm.return
    }
  }
}
