// RUN: tbc-opt %s -split-input-file -verify-diagnostics

// The discardable attributes tbc's passes set are declared with the dialect
// and verified wherever they appear.

// expected-error @+1 {{unknown tbc attribute 'tbc.column_parallel'}}
func.func private @k0(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> attributes {tbc.column_parallel} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'tbc.kernel' function must hold exactly one tbc op}}
func.func private @k0(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> attributes {tbc.kernel} {
  return %x : tensor<?x?x8xf32>
}

// -----

// Targets take a kernel's scalar operands after all its buffers.
// expected-error @+1 {{'tbc.kernel' function must take its scalar operands last}}
func.func private @k0(%w: i64, %q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> attributes {tbc.kernel} {
  %0 = tbc.attention %q, %kv, %kv window(%w) heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 causal : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

// expected-error @+1 {{'tbc.kernel' belongs on a func.func with a body}}
func.func private @k0(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> attributes {tbc.kernel}

// -----

// expected-error @+1 {{'tbc.kernel' is a unit attribute}}
func.func private @k0(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> attributes {tbc.kernel = 1 : i64} {
  %y = tbc.add %x, %x : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'tbc.kv_cache' is for tbc.attention kernels, not 'tbc.add'}}
func.func private @k0(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> attributes {tbc.kernel, tbc.kv_cache} {
  %y = tbc.add %x, %x : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'tbc.vocab_size' must be a positive i64}}
module attributes {tbc.vocab_size = 0 : i64} {
}

// -----

// expected-error @+1 {{'tbc.max_positions' belongs on the module}}
func.func private @f() attributes {tbc.max_positions = 8 : i64}

// -----

// expected-error @+1 {{'tbc.architecture' must be a non-empty string}}
module attributes {tbc.architecture = ""} {
}

// -----

// expected-error @+1 {{'tbc.name' of argument 0 must be a non-empty string}}
func.func private @f(%x: tensor<8xf32> {tbc.name = 3 : i64})

// -----

// expected-error @+1 {{unknown tbc argument attribute 'tbc.nmae'}}
func.func private @f(%x: tensor<8xf32> {tbc.nmae = "w"})
