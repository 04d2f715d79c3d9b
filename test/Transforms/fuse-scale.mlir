// RUN: tbc-opt %s -split-input-file --tbc-fuse-scale | FileCheck %s
// RUN: tbc-opt %s -split-input-file --tbc-fuse-scale --tbc-fuse-softcap --tbc-fuse-residual-projection | FileCheck %s --check-prefix=CHAIN

// Cohere's logit scale on the LM head.
// CHECK-LABEL: func.func @head
// CHECK: %[[L:.*]] = tbc.fused_linear %{{.*}}, %{{.*}} scale = 6.250000e-02 : (tensor<?x?x32xf32>, tensor<100x32xf32>) -> tensor<?x?x100xf32>
// CHECK-NOT: tbc.scale
// CHECK: return %[[L]]
func.func @head(%x: tensor<?x?x32xf32>, %w: tensor<100x32xf32>) -> tensor<?x?x100xf32> {
  %l = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<100x32xf32> -> tensor<?x?x100xf32>
  %s = tbc.scale %l by 0.0625 : tensor<?x?x100xf32>
  return %s : tensor<?x?x100xf32>
}

// -----

// Onto a projection whose norm is already fused (the prologue stays), then
// a soft-cap after it: the epilogue scales first, as the IR did.
// CHECK-LABEL: func.func @fused_head
// CHECK: tbc.fused_linear %{{.*}}, %{{.*}} norm = rms eps = 1.000000e-05 scale = 2.500000e-01 :
// CHECK: tbc.softcap
// CHAIN-LABEL: func.func @fused_head
// CHAIN: tbc.fused_linear %{{.*}}, %{{.*}} norm = rms eps = 1.000000e-05 scale = 2.500000e-01 softcap = 3.000000e+01 :
// CHAIN-NOT: tbc.softcap
func.func @fused_head(%x: tensor<?x?x32xf32>, %w: tensor<100x32xf32>) -> tensor<?x?x100xf32> {
  %l = tbc.fused_linear %x, %w norm = rms eps = 1.0e-5 : (tensor<?x?x32xf32>, tensor<100x32xf32>) -> tensor<?x?x100xf32>
  %s = tbc.scale %l by 0.25 : tensor<?x?x100xf32>
  %c = tbc.softcap %s cap = 30.0 : tensor<?x?x100xf32>
  return %c : tensor<?x?x100xf32>
}

// -----

// Granite's residual multiplier: the scaled output projection, then its
// residual add, both in the epilogue (y = 0.22 z + h).
// CHECK-LABEL: func.func @residual
// CHECK: %[[P:.*]] = tbc.fused_linear %{{.*}}, %{{.*}} scale = 2.200000e-01 :
// CHECK: tbc.add %{{.*}}, %[[P]]
// CHAIN-LABEL: func.func @residual
// CHAIN: %[[P:.*]] = tbc.fused_linear %{{.*}}, %{{.*}} residual(%{{.*}}) scale = 2.200000e-01 :
// CHAIN-NOT: tbc.add
// CHAIN: return %[[P]]
func.func @residual(%a: tensor<?x?x32xf32>, %w: tensor<32x32xf32>, %h: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %o = tbc.linear %a, %w : tensor<?x?x32xf32>, tensor<32x32xf32> -> tensor<?x?x32xf32>
  %s = tbc.scale %o by 0.22 : tensor<?x?x32xf32>
  %r = tbc.add %h, %s : tensor<?x?x32xf32>
  return %r : tensor<?x?x32xf32>
}

// -----

// Negative: the unscaled output is used too.
// CHECK-LABEL: func.func @escapes
// CHECK: tbc.scale
func.func @escapes(%x: tensor<?x?x32xf32>, %w: tensor<100x32xf32>) -> (tensor<?x?x100xf32>, tensor<?x?x100xf32>) {
  %l = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<100x32xf32> -> tensor<?x?x100xf32>
  %s = tbc.scale %l by 0.0625 : tensor<?x?x100xf32>
  return %s, %l : tensor<?x?x100xf32>, tensor<?x?x100xf32>
}

// -----

// Negative: after a residual add or a soft-cap the epilogue would scale in
// the wrong order; a second scale stays apart.
// CHECK-LABEL: func.func @after_residual
// CHECK: tbc.fused_linear {{.*}} residual(%{{.*}}) :
// CHECK: tbc.scale
func.func @after_residual(%a: tensor<?x?x32xf32>, %w: tensor<32x32xf32>, %h: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %o = tbc.fused_linear %a, %w residual(%h) : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %s = tbc.scale %o by 0.5 : tensor<?x?x32xf32>
  return %s : tensor<?x?x32xf32>
}
// CHECK-LABEL: func.func @after_softcap
// CHECK: tbc.fused_linear {{.*}} softcap = 3.000000e+01 :
// CHECK: tbc.scale
func.func @after_softcap(%a: tensor<?x?x32xf32>, %w: tensor<32x32xf32>) -> tensor<?x?x32xf32> {
  %o = tbc.fused_linear %a, %w softcap = 30.0 : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  %s = tbc.scale %o by 0.5 : tensor<?x?x32xf32>
  return %s : tensor<?x?x32xf32>
}
// CHECK-LABEL: func.func @twice
// CHECK: tbc.fused_linear {{.*}} scale = 5.000000e-01 :
// CHECK: tbc.scale {{.*}} by 4.000000e+00
func.func @twice(%a: tensor<?x?x32xf32>, %w: tensor<32x32xf32>) -> tensor<?x?x32xf32> {
  %o = tbc.linear %a, %w : tensor<?x?x32xf32>, tensor<32x32xf32> -> tensor<?x?x32xf32>
  %s = tbc.scale %o by 0.5 : tensor<?x?x32xf32>
  %t = tbc.scale %s by 4.0 : tensor<?x?x32xf32>
  return %t : tensor<?x?x32xf32>
}
