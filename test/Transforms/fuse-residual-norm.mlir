// RUN: tbc-opt %s -split-input-file --tbc-fuse-residual-norm | FileCheck %s

// Post-norm: n = norm(x + f) feeds the next residual and the projections.
// CHECK-LABEL: func.func @post_norm
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x32xf32>, %[[F:.*]]: tensor<?x?x32xf32>, %[[G:.*]]: tensor<32xf32>)
// CHECK: %[[S:.*]], %[[N:.*]] = tbc.add_norm rms %[[X]], %[[F]], %[[G]] eps = 1.000000e-05 : tensor<?x?x32xf32>, tensor<32xf32>
// CHECK-NOT: tbc.add %
// CHECK: return %[[S]], %[[N]]
func.func @post_norm(%x: tensor<?x?x32xf32>, %f: tensor<?x?x32xf32>, %g: tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %s = tbc.add %x, %f : tensor<?x?x32xf32>
  %n = tbc.rms_norm %s, %g eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>
  return %s, %n : tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm_bias
// CHECK: tbc.add_norm layer %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
func.func @layer_norm_bias(%x: tensor<?x?x32xf32>, %f: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %s = tbc.add %x, %f : tensor<?x?x32xf32>
  %n = tbc.layer_norm %s, %g, %b eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %n : tensor<?x?x32xf32>
}

// -----

// Gemma's (1 + w) gain is carried over.
// CHECK-LABEL: func.func @gain_offset
// CHECK: tbc.add_norm rms {{.*}} gain_offset = 1.000000e+00
func.func @gain_offset(%x: tensor<?x?x32xf32>, %f: tensor<?x?x32xf32>, %g: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %s = tbc.add %x, %f : tensor<?x?x32xf32>
  %n = tbc.rms_norm %s, %g eps = 1.0e-6 gain_offset = 1.0 : tensor<?x?x32xf32>, tensor<32xf32>
  return %n : tensor<?x?x32xf32>
}

// -----

// Negative: the norm's input is not a residual add.
// CHECK-LABEL: func.func @not_an_add
// CHECK-NOT: tbc.add_norm
func.func @not_an_add(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %a = tbc.activation relu %x : tensor<?x?x32xf32>
  %n = tbc.rms_norm %a, %g eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>
  return %n : tensor<?x?x32xf32>
}

// -----

// Negative: a per-head norm after an add is left alone.
// CHECK-LABEL: func.func @grouped
// CHECK-NOT: tbc.add_norm
func.func @grouped(%x: tensor<?x?x32xf32>, %f: tensor<?x?x32xf32>, %g: tensor<8xf32>) -> tensor<?x?x32xf32> {
  %s = tbc.add %x, %f : tensor<?x?x32xf32>
  %n = tbc.rms_norm %s, %g eps = 1.0e-5 groups = 4 : tensor<?x?x32xf32>, tensor<8xf32>
  return %n : tensor<?x?x32xf32>
}

// -----

// Negative: the norm weight is defined after the add (it would have to
// move above it).
// CHECK-LABEL: func.func @late_weight
// CHECK-NOT: tbc.add_norm
func.func @late_weight(%x: tensor<?x?x32xf32>, %f: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %s = tbc.add %x, %f : tensor<?x?x32xf32>
  %g = tbc.param "late" : tensor<32xf32>
  %n = tbc.rms_norm %s, %g eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>
  return %n : tensor<?x?x32xf32>
}

// -----

// A post-norm added to the residual (Gemma's sandwich, OLMo 2): r + norm(x),
// the add the norm's only use, becomes norm_add; the normalised rows are
// never a tensor of their own. Either operand of the add may be the norm.
// CHECK-LABEL: func.func @norm_add
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x32xf32>, %[[R:.*]]: tensor<?x?x32xf32>, %[[G:.*]]: tensor<32xf32>)
// CHECK: %[[H:.*]] = tbc.norm_add rms %[[X]], %[[G]] residual(%[[R]]) eps = 1.000000e-05 gain_offset = 1.000000e+00 : tensor<?x?x32xf32>, tensor<32xf32>
// CHECK: %[[H2:.*]] = tbc.norm_add rms %[[X]], %[[G]] residual(%[[H]]) eps = 1.000000e-05 gain_offset = 1.000000e+00
// CHECK-NOT: tbc.rms_norm
// CHECK-NOT: tbc.add %
// CHECK: return %[[H2]]
func.func @norm_add(%x: tensor<?x?x32xf32>, %r: tensor<?x?x32xf32>, %g: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %n = tbc.rms_norm %x, %g eps = 1.0e-5 gain_offset = 1.0 : tensor<?x?x32xf32>, tensor<32xf32>
  %h = tbc.add %r, %n : tensor<?x?x32xf32>
  %n2 = tbc.rms_norm %x, %g eps = 1.0e-5 gain_offset = 1.0 : tensor<?x?x32xf32>, tensor<32xf32>
  %h2 = tbc.add %n2, %h : tensor<?x?x32xf32>
  return %h2 : tensor<?x?x32xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm_add
// CHECK: tbc.norm_add layer %{{.*}}, %{{.*}}, %{{.*}} residual(%{{.*}}) eps = 1.000000e-05 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
func.func @layer_norm_add(%x: tensor<?x?x32xf32>, %r: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %n = tbc.layer_norm %x, %g, %b eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  %h = tbc.add %r, %n : tensor<?x?x32xf32>
  return %h : tensor<?x?x32xf32>
}

// -----

// Negative: the normalised rows are used elsewhere too (they must exist),
// and a per-head norm.
// CHECK-LABEL: func.func @norm_used_twice
// CHECK-NOT: tbc.norm_add
// CHECK: tbc.rms_norm
// CHECK: tbc.add
// CHECK: tbc.rms_norm {{.*}} groups = 4
// CHECK: tbc.add
func.func @norm_used_twice(%x: tensor<?x?x32xf32>, %r: tensor<?x?x32xf32>, %g: tensor<32xf32>, %h8: tensor<8xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %n = tbc.rms_norm %x, %g eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>
  %h = tbc.add %r, %n : tensor<?x?x32xf32>
  %q = tbc.rms_norm %x, %h8 eps = 1.0e-5 groups = 4 : tensor<?x?x32xf32>, tensor<8xf32>
  %k = tbc.add %r, %q : tensor<?x?x32xf32>
  return %h, %n, %k : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}
