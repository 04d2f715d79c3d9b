// RUN: tbc-opt %s -split-input-file --tbc-merge-qkv | FileCheck %s

// CHECK-LABEL: func.func @qkv
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[WQ:.*]]: tensor<64x64xf32>, %[[WK:.*]]: tensor<16x64xf32>, %[[WV:.*]]: tensor<16x64xf32>
// CHECK: %[[W:.*]] = tbc.concat %[[WQ]], %[[WK]], %[[WV]] dim = 0 : (tensor<64x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<96x64xf32>
// CHECK: %[[QKV:.*]] = tbc.linear %[[X]], %[[W]] : tensor<?x?x64xf32>, tensor<96x64xf32> -> tensor<?x?x96xf32>
// CHECK: %[[S:.*]]:3 = tbc.split %[[QKV]] : tensor<?x?x96xf32> -> tensor<?x?x64xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
// CHECK: return %[[S]]#0, %[[S]]#1, %[[S]]#2
func.func @qkv(%x: tensor<?x?x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<16x64xf32>, %wv: tensor<16x64xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  %q = tbc.linear %x, %wq : tensor<?x?x64xf32>, tensor<64x64xf32> -> tensor<?x?x64xf32>
  %k = tbc.linear %x, %wk : tensor<?x?x64xf32>, tensor<16x64xf32> -> tensor<?x?x16xf32>
  %v = tbc.linear %x, %wv : tensor<?x?x64xf32>, tensor<16x64xf32> -> tensor<?x?x16xf32>
  return %q, %k, %v : tensor<?x?x64xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// -----

// Qwen2: biases are concatenated too, on tbc.params.
// CHECK-LABEL: func.func @qkv_bias
// CHECK-DAG: %[[BQ:.*]] = tbc.param "bq"
// CHECK-DAG: %[[BK:.*]] = tbc.param "bk"
// CHECK: %[[W:.*]] = tbc.concat %{{.*}}, %{{.*}} dim = 0
// CHECK: %[[B:.*]] = tbc.concat %[[BQ]], %[[BK]] dim = 0 : (tensor<32xf32>, tensor<16xf32>) -> tensor<48xf32>
// CHECK: tbc.linear %{{.*}}, %[[W]], %[[B]] : tensor<?x?x32xf32>, tensor<48x32xf32>, tensor<48xf32> -> tensor<?x?x48xf32>
func.func @qkv_bias(%x: tensor<?x?x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>) {
  %wq = tbc.param "wq" : tensor<32x32xf32>
  %bq = tbc.param "bq" : tensor<32xf32>
  %wk = tbc.param "wk" : tensor<16x32xf32>
  %bk = tbc.param "bk" : tensor<16xf32>
  %q = tbc.linear %x, %wq, %bq : tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<?x?x32xf32>
  %k = tbc.linear %x, %wk, %bk : tensor<?x?x32xf32>, tensor<16x32xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
  return %q, %k : tensor<?x?x32xf32>, tensor<?x?x16xf32>
}

// -----

// [in, out] weights concatenate along their output dimension.
// CHECK-LABEL: func.func @in_out
// CHECK: tbc.concat %{{.*}}, %{{.*}} dim = 1 : (tensor<32x8xf32>, tensor<32x8xf32>) -> tensor<32x16xf32>
// CHECK: tbc.linear {{.*}} weight_in_out
func.func @in_out(%x: tensor<?x?x32xf32>, %a: tensor<32x8xf32>, %b: tensor<32x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %0 = tbc.linear %x, %a weight_in_out : tensor<?x?x32xf32>, tensor<32x8xf32> -> tensor<?x?x8xf32>
  %1 = tbc.linear %x, %b weight_in_out : tensor<?x?x32xf32>, tensor<32x8xf32> -> tensor<?x?x8xf32>
  return %0, %1 : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Negative: different inputs stay apart.
// CHECK-LABEL: func.func @different_inputs
// CHECK-NOT: tbc.concat
// CHECK-COUNT-2: tbc.linear
func.func @different_inputs(%x: tensor<?x?x32xf32>, %y: tensor<?x?x32xf32>, %w: tensor<8x32xf32>, %u: tensor<8x32xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %0 = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<8x32xf32> -> tensor<?x?x8xf32>
  %1 = tbc.linear %y, %u : tensor<?x?x32xf32>, tensor<8x32xf32> -> tensor<?x?x8xf32>
  return %0, %1 : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Negative: one projection has a bias and the other not.
// CHECK-LABEL: func.func @mixed_bias
// CHECK-NOT: tbc.concat
func.func @mixed_bias(%x: tensor<?x?x32xf32>, %w: tensor<8x32xf32>, %b: tensor<8xf32>, %u: tensor<8x32xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %0 = tbc.linear %x, %w, %b : tensor<?x?x32xf32>, tensor<8x32xf32>, tensor<8xf32> -> tensor<?x?x8xf32>
  %1 = tbc.linear %x, %u : tensor<?x?x32xf32>, tensor<8x32xf32> -> tensor<?x?x8xf32>
  return %0, %1 : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Negative: a weight computed per call (not known at bind time).
// CHECK-LABEL: func.func @runtime_weight
// CHECK-NOT: tbc.concat
func.func @runtime_weight(%x: tensor<?x?x32xf32>, %w: tensor<8x32xf32>, %u: tensor<8x32xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %s = tbc.add %w, %u : tensor<8x32xf32>
  %0 = tbc.linear %x, %s : tensor<?x?x32xf32>, tensor<8x32xf32> -> tensor<?x?x8xf32>
  %1 = tbc.linear %x, %u : tensor<?x?x32xf32>, tensor<8x32xf32> -> tensor<?x?x8xf32>
  return %0, %1 : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Negative: different weight layouts.
// CHECK-LABEL: func.func @mixed_layout
// CHECK-NOT: tbc.concat
func.func @mixed_layout(%x: tensor<?x?x32xf32>, %w: tensor<8x32xf32>, %u: tensor<32x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %0 = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<8x32xf32> -> tensor<?x?x8xf32>
  %1 = tbc.linear %x, %u weight_in_out : tensor<?x?x32xf32>, tensor<32x8xf32> -> tensor<?x?x8xf32>
  return %0, %1 : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}
