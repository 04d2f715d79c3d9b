// --tbc-gpu-module-to-binary serializes the targets of each gpu.module side by
// side and gives what upstream's gpu-module-to-binary gives, object for
// object, in the targets' order (the serializer's own timings aside).
// RUN: tbc-opt %s --tbc-gpu-module-to-binary | sed -e 's/LLVMIRToISATimeInMs = [0-9]*/T/g' > %t.ours
// RUN: tbc-opt %s --gpu-module-to-binary=format=isa | sed -e 's/LLVMIRToISATimeInMs = [0-9]*/T/g' > %t.upstream
// RUN: diff %t.ours %t.upstream
// RUN: FileCheck %s < %t.ours
// An unknown format is refused.
// RUN: not tbc-opt %s --tbc-gpu-module-to-binary=format=elf 2>&1 | FileCheck %s --check-prefix=FORMAT
// FORMAT: unknown format 'elf' (isa, bin, fatbin or llvm)

// CHECK: gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_80", features = "+ptx80">, properties = {T : i64, O = 2 : i32}, assembly = "
// CHECK-SAME: .target sm_80
// CHECK-SAME: .visible .entry scale(
// CHECK-SAME: #gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">
// CHECK-SAME: .target sm_90
// CHECK-SAME: .visible .entry scale(
// CHECK: gpu.binary @more [#gpu.object<#nvvm.target<chip = "sm_86", features = "+ptx80">
// CHECK-SAME: .target sm_86
// CHECK-SAME: .visible .entry negate(
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_80", features = "+ptx80">,
                       #nvvm.target<chip = "sm_90", features = "+ptx80">] {
    llvm.func @scale(%p: !llvm.ptr, %s: f32) attributes {gpu.kernel, nvvm.kernel} {
      %t = nvvm.read.ptx.sreg.tid.x : i32
      %q = llvm.getelementptr %p[%t] : (!llvm.ptr, i32) -> !llvm.ptr, f32
      %v = llvm.load %q : !llvm.ptr -> f32
      %r = llvm.fmul %v, %s : f32
      llvm.store %r, %q : f32, !llvm.ptr
      llvm.return
    }
  }
  gpu.module @more [#nvvm.target<chip = "sm_86", features = "+ptx80">] {
    llvm.func @negate(%p: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      %t = nvvm.read.ptx.sreg.tid.x : i32
      %q = llvm.getelementptr %p[%t] : (!llvm.ptr, i32) -> !llvm.ptr, f32
      %v = llvm.load %q : !llvm.ptr -> f32
      %r = llvm.fneg %v : f32
      llvm.store %r, %q : f32, !llvm.ptr
      llvm.return
    }
  }
}
