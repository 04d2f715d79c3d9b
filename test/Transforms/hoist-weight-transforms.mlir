// RUN: tbc-opt %s -split-input-file --tbc-hoist-weight-transforms | FileCheck %s

// Transforms on a shared layer function's weight arguments move to every
// call site, onto that layer's parameters; unused arguments disappear.
// CHECK-LABEL: func.func @forward
// CHECK: %[[G0:.*]] = tbc.param "l0.norm"
// CHECK: %[[A0:.*]] = tbc.param "l0.a"
// CHECK: %[[B0:.*]] = tbc.param "l0.b"
// CHECK: %[[C0:.*]] = tbc.concat %[[A0]], %[[B0]] dim = 0
// CHECK: %[[F0:.*]] = tbc.fold_gain %[[C0]], %[[G0]]
// CHECK: %[[H:.*]] = call @block(%{{.*}}, %[[F0]]) : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
// CHECK: tbc.param "l1.norm"
// CHECK: tbc.concat
// CHECK: tbc.fold_gain
// CHECK: call @block(
// CHECK-LABEL: func.func private @block
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x4xf32> {tbc.name = "hidden"}, %[[W:.*]]: tensor<8x4xf32> {tbc.name = "fold_gain(concat(a.weight, b.weight), norm.weight)"})
// CHECK-NEXT: tbc.fused_linear %[[X]], %[[W]] norm = rms
// CHECK-NOT: tbc.concat
func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x8xf32> {
  %g0 = tbc.param "l0.norm" : tensor<4xf32>
  %a0 = tbc.param "l0.a" : tensor<4x4xf32>
  %b0 = tbc.param "l0.b" : tensor<4x4xf32>
  %h = call @block(%x, %g0, %a0, %b0) : (tensor<?x?x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<?x?x8xf32>
  %g1 = tbc.param "l1.norm" : tensor<4xf32>
  %a1 = tbc.param "l1.a" : tensor<4x4xf32>
  %b1 = tbc.param "l1.b" : tensor<4x4xf32>
  %s:2 = tbc.split %h : tensor<?x?x8xf32> -> tensor<?x?x4xf32>, tensor<?x?x4xf32>
  %o = call @block(%s#0, %g1, %a1, %b1) : (tensor<?x?x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}
func.func private @block(%x: tensor<?x?x4xf32> {tbc.name = "hidden"}, %g: tensor<4xf32> {tbc.name = "norm.weight"},
                         %a: tensor<4x4xf32> {tbc.name = "a.weight"}, %b: tensor<4x4xf32> {tbc.name = "b.weight"}) -> tensor<?x?x8xf32> {
  %c = tbc.concat %a, %b dim = 0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %f = tbc.fold_gain %c, %g : tensor<8x4xf32>, tensor<4xf32>
  %y = tbc.fused_linear %x, %f norm = rms eps = 1.0e-5 : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// A transform chain whose intermediate result is needed inside (LayerNorm:
// the folded weight and its row sums) is cloned whole at the call site.
// CHECK-LABEL: func.func @forward
// CHECK: %[[F:.*]] = tbc.fold_gain
// CHECK: %[[C:.*]] = tbc.weight_row_sums %[[F]]
// CHECK: call @block(%{{.*}}, %[[F]], %[[C]])
// CHECK-LABEL: func.func private @block
// CHECK-NOT: tbc.fold_gain
// CHECK: tbc.fused_linear
func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %g = tbc.param "g" : tensor<4xf32>
  %w = tbc.param "w" : tensor<4x4xf32>
  %h = call @block(%x, %g, %w) : (tensor<?x?x4xf32>, tensor<4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  return %h : tensor<?x?x4xf32>
}
func.func private @block(%x: tensor<?x?x4xf32>, %g: tensor<4xf32>, %w: tensor<4x4xf32>) -> tensor<?x?x4xf32> {
  %f = tbc.fold_gain %w, %g : tensor<4x4xf32>, tensor<4xf32>
  %c = tbc.weight_row_sums %f : tensor<4x4xf32> -> tensor<4xf32>
  %y = tbc.fused_linear %x, %f mean_correction(%c) norm = layer eps = 1.0e-5 : (tensor<?x?x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}

// -----

// Negative: a public function's signature belongs to its callers.
// CHECK-LABEL: func.func @public_block
// CHECK: tbc.concat
func.func @public_block(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %c = tbc.concat %a, %b dim = 0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}
