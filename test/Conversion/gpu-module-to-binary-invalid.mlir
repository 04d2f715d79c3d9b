// RUN: tbc-opt %s --tbc-gpu-module-to-binary -split-input-file -verify-diagnostics

module attributes {gpu.container_module} {
  // expected-error @+1 {{the module has no target attributes}}
  gpu.module @untargeted {
    llvm.func @k() attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
}

// -----

// A module LLVM cannot translate (an op outside the LLVM dialects) fails the
// pass, naming the module and the target.
module attributes {gpu.container_module} {
  // expected-error @+2 {{Failed creating the llvm::Module}}
  // expected-error @+1 {{serializing the module for #nvvm.target<chip = "sm_90"}}
  gpu.module @broken [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
    llvm.func @k() attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @+1 {{cannot be converted to LLVM IR}}
      %0 = arith.constant 0 : i32
      llvm.return
    }
  }
}
