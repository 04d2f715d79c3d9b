// RUN: tbc-opt %s -split-input-file --tbc-fuse-gate-up | FileCheck %s

// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x32xf32>, %[[WG:.*]]: tensor<64x32xf32>, %[[WU:.*]]: tensor<64x32xf32>)
// CHECK: %[[W:.*]] = tbc.concat %[[WG]], %[[WU]] dim = 0 : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<128x32xf32>
// CHECK: %[[H:.*]] = tbc.fused_linear %[[X]], %[[W]] act = silu glu : (tensor<?x?x32xf32>, tensor<128x32xf32>) -> tensor<?x?x64xf32>
// CHECK-NOT: tbc.glu
// CHECK: return %[[H]]
func.func @swiglu(%x: tensor<?x?x32xf32>, %wg: tensor<64x32xf32>, %wu: tensor<64x32xf32>) -> tensor<?x?x64xf32> {
  %g = tbc.linear %x, %wg : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
  %u = tbc.linear %x, %wu : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
  %h = tbc.glu silu %g, %u : tensor<?x?x64xf32>
  return %h : tensor<?x?x64xf32>
}

// -----

// Phi-3's gate_up_proj is used as it is: no concat, no copy.
// CHECK-LABEL: func.func @phi3_gate_up
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x32xf32>, %[[W:.*]]: tensor<128x32xf32>)
// CHECK-NOT: tbc.concat
// CHECK: tbc.fused_linear %[[X]], %[[W]] act = silu glu : (tensor<?x?x32xf32>, tensor<128x32xf32>) -> tensor<?x?x64xf32>
// CHECK-NOT: tbc.split
func.func @phi3_gate_up(%x: tensor<?x?x32xf32>, %w: tensor<128x32xf32>) -> tensor<?x?x64xf32> {
  %gu = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<128x32xf32> -> tensor<?x?x128xf32>
  %g, %u = tbc.split %gu : tensor<?x?x128xf32> -> tensor<?x?x64xf32>, tensor<?x?x64xf32>
  %h = tbc.glu silu %g, %u : tensor<?x?x64xf32>
  return %h : tensor<?x?x64xf32>
}

// -----

// GeGLU with biases.
// CHECK-LABEL: func.func @geglu_bias
// CHECK: %[[W:.*]] = tbc.concat
// CHECK: %[[B:.*]] = tbc.concat %{{.*}}, %{{.*}} dim = 0 : (tensor<64xf32>, tensor<64xf32>) -> tensor<128xf32>
// CHECK: tbc.fused_linear %{{.*}}, %[[W]] bias(%[[B]]) act = gelu_tanh glu
func.func @geglu_bias(%x: tensor<?x?x32xf32>, %wg: tensor<64x32xf32>, %bg: tensor<64xf32>, %wu: tensor<64x32xf32>, %bu: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %g = tbc.linear %x, %wg, %bg : tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  %u = tbc.linear %x, %wu, %bu : tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  %h = tbc.glu gelu_tanh %g, %u : tensor<?x?x64xf32>
  return %h : tensor<?x?x64xf32>
}

// -----

// A plain MLP's activation becomes the projection's epilogue.
// CHECK-LABEL: func.func @mlp
// CHECK: tbc.fused_linear %{{.*}}, %{{.*}} bias(%{{.*}}) act = gelu : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<128xf32>) -> tensor<?x?x128xf32>
// CHECK-NOT: tbc.activation
func.func @mlp(%x: tensor<?x?x32xf32>, %w: tensor<128x32xf32>, %b: tensor<128xf32>) -> tensor<?x?x128xf32> {
  %u = tbc.linear %x, %w, %b : tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<128xf32> -> tensor<?x?x128xf32>
  %h = tbc.activation gelu %u : tensor<?x?x128xf32>
  return %h : tensor<?x?x128xf32>
}

// -----

// Negative: the gate projection has another user, so it must be written.
// CHECK-LABEL: func.func @gate_escapes
// CHECK-NOT: tbc.fused_linear
// CHECK: tbc.glu silu
func.func @gate_escapes(%x: tensor<?x?x32xf32>, %wg: tensor<64x32xf32>, %wu: tensor<64x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %g = tbc.linear %x, %wg : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
  %u = tbc.linear %x, %wu : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
  %h = tbc.glu silu %g, %u : tensor<?x?x64xf32>
  return %h, %g : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// Negative: gate and up read different inputs.
// CHECK-LABEL: func.func @different_inputs
// CHECK-NOT: tbc.fused_linear
func.func @different_inputs(%x: tensor<?x?x32xf32>, %y: tensor<?x?x32xf32>, %wg: tensor<64x32xf32>, %wu: tensor<64x32xf32>) -> tensor<?x?x64xf32> {
  %g = tbc.linear %x, %wg : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
  %u = tbc.linear %y, %wu : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
  %h = tbc.glu silu %g, %u : tensor<?x?x64xf32>
  return %h : tensor<?x?x64xf32>
}

// -----

// Negative: a per-group (interleaved) split is not a [gate; up] weight.
// CHECK-LABEL: func.func @grouped_split
// CHECK-NOT: tbc.fused_linear
func.func @grouped_split(%x: tensor<?x?x32xf32>, %w: tensor<128x32xf32>) -> tensor<?x?x64xf32> {
  %gu = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<128x32xf32> -> tensor<?x?x128xf32>
  %g, %u = tbc.split %gu groups = 4 : tensor<?x?x128xf32> -> tensor<?x?x64xf32>, tensor<?x?x64xf32>
  %h = tbc.glu silu %g, %u : tensor<?x?x64xf32>
  return %h : tensor<?x?x64xf32>
}

// -----

// Negative: gate and up swapped in the split (up first) are not the layout.
// CHECK-LABEL: func.func @swapped_split
// CHECK-NOT: tbc.fused_linear
func.func @swapped_split(%x: tensor<?x?x32xf32>, %w: tensor<128x32xf32>) -> tensor<?x?x64xf32> {
  %gu = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<128x32xf32> -> tensor<?x?x128xf32>
  %a, %b = tbc.split %gu : tensor<?x?x128xf32> -> tensor<?x?x64xf32>, tensor<?x?x64xf32>
  %h = tbc.glu silu %b, %a : tensor<?x?x64xf32>
  return %h : tensor<?x?x64xf32>
}
