// RUN: tbc-opt %s -split-input-file --tbc-fuse-softcap | FileCheck %s

// Gemma 2's final-logit soft-cap on the LM head.
// CHECK-LABEL: func.func @head
// CHECK: %[[L:.*]] = tbc.fused_linear %{{.*}}, %{{.*}} softcap = 3.000000e+01 : (tensor<?x?x32xf32>, tensor<100x32xf32>) -> tensor<?x?x100xf32>
// CHECK-NOT: tbc.softcap
// CHECK: return %[[L]]
func.func @head(%x: tensor<?x?x32xf32>, %w: tensor<100x32xf32>) -> tensor<?x?x100xf32> {
  %l = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<100x32xf32> -> tensor<?x?x100xf32>
  %c = tbc.softcap %l cap = 30.0 : tensor<?x?x100xf32>
  return %c : tensor<?x?x100xf32>
}

// -----

// Onto an already fused projection (norm prologue kept).
// CHECK-LABEL: func.func @fused_head
// CHECK: tbc.fused_linear %{{.*}}, %{{.*}} norm = rms eps = 1.000000e-05 softcap = 3.000000e+01
func.func @fused_head(%x: tensor<?x?x32xf32>, %w: tensor<100x32xf32>) -> tensor<?x?x100xf32> {
  %l = tbc.fused_linear %x, %w norm = rms eps = 1.0e-5 : (tensor<?x?x32xf32>, tensor<100x32xf32>) -> tensor<?x?x100xf32>
  %c = tbc.softcap %l cap = 30.0 : tensor<?x?x100xf32>
  return %c : tensor<?x?x100xf32>
}

// -----

// Negative: the uncapped logits are needed too.
// CHECK-LABEL: func.func @escapes
// CHECK: tbc.softcap
func.func @escapes(%x: tensor<?x?x32xf32>, %w: tensor<100x32xf32>) -> (tensor<?x?x100xf32>, tensor<?x?x100xf32>) {
  %l = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<100x32xf32> -> tensor<?x?x100xf32>
  %c = tbc.softcap %l cap = 30.0 : tensor<?x?x100xf32>
  return %c, %l : tensor<?x?x100xf32>, tensor<?x?x100xf32>
}

// -----

// Negative: a soft-cap of something that is not a projection.
// CHECK-LABEL: func.func @not_projection
// CHECK: tbc.softcap
func.func @not_projection(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %a = tbc.activation silu %x : tensor<?x?x32xf32>
  %c = tbc.softcap %a cap = 30.0 : tensor<?x?x32xf32>
  return %c : tensor<?x?x32xf32>
}

// -----

// Negative: two soft-caps in a row: the second stays.
// CHECK-LABEL: func.func @twice
// CHECK: tbc.fused_linear {{.*}} softcap = 3.000000e+01
// CHECK: tbc.softcap {{.*}} cap = 1.000000e+01
func.func @twice(%x: tensor<?x?x32xf32>, %w: tensor<100x32xf32>) -> tensor<?x?x100xf32> {
  %l = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<100x32xf32> -> tensor<?x?x100xf32>
  %c = tbc.softcap %l cap = 30.0 : tensor<?x?x100xf32>
  %d = tbc.softcap %c cap = 10.0 : tensor<?x?x100xf32>
  return %d : tensor<?x?x100xf32>
}
