// RUN: tbc-opt %s -split-input-file --tbc-fuse-rope | FileCheck %s

// The merged QKV projection: q and k (the leading 64 + 16 columns) leave the
// projection rotated; v passes through. The norm prologue is kept.
// CHECK-LABEL: func.func @merged
// CHECK: %[[QKV:.*]] = tbc.fused_linear %{{.*}}, %{{.*}} positions(%{{.*}}) norm = rms eps = 1.000000e-05 rope = <style = neox, columns = 80, head_dim = 16, rotary_dim = 16, theta = 1.000000e+04>
// CHECK: %[[S:.*]]:3 = tbc.split %[[QKV]]
// CHECK-NOT: tbc.rope
// CHECK: tbc.attention %[[S]]#0, %[[S]]#1, %[[S]]#2
func.func @merged(%x: tensor<?x?x32xf32>, %w: tensor<96x32xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x64xf32> {
  %qkv = tbc.fused_linear %x, %w norm = rms eps = 1.0e-5 : (tensor<?x?x32xf32>, tensor<96x32xf32>) -> tensor<?x?x96xf32>
  %q, %k, %v = tbc.split %qkv : tensor<?x?x96xf32> -> tensor<?x?x64xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
  %qr = tbc.rope neox %q, %pos head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<?x?x64xf32>, tensor<?x?xi32>
  %kr = tbc.rope neox %k, %pos head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<?x?x16xf32>, tensor<?x?xi32>
  %o = tbc.attention %qr, %kr, %v heads = 4 kv_heads = 1 head_dim = 16 scale = 0.25 causal : tensor<?x?x64xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
  return %o : tensor<?x?x64xf32>
}

// -----

// A plain linear (16-bit weights: no norm prologue) becomes a fused_linear
// with the bias kept; a length-dependent scaling brings its lengths along.
// CHECK-LABEL: func.func @linear_lengths
// CHECK: tbc.fused_linear %{{.*}}, %{{.*}} bias(%{{.*}}) positions(%[[P:[a-z0-9]+]]) lengths(%[[L:[a-z0-9]+]]) rope = <style = gptj, columns = 32, head_dim = 16, rotary_dim = 8, theta = 1.000000e+04, scaling = <kind = dynamic, factor = 2.000000e+00, original_max_position = 16>>
// CHECK-NOT: tbc.rope
func.func @linear_lengths(%x: tensor<?x?x32xf32>, %w: tensor<32x32xf32>, %b: tensor<32xf32>, %pos: tensor<?x?xi32>, %len: tensor<?x?xi32>) -> tensor<?x?x32xf32> {
  %y = tbc.linear %x, %w, %b : tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<?x?x32xf32>
  %r = tbc.rope gptj %y, %pos lengths(%len) head_dim = 16 rotary_dim = 8 theta = 10000.0 scaling = <kind = dynamic, factor = 2.0, original_max_position = 16> : tensor<?x?x32xf32>, tensor<?x?xi32>, tensor<?x?xi32>
  return %r : tensor<?x?x32xf32>
}

// -----

// Negative: QK-norm between the split and RoPE (Qwen3): the per-head norm
// needs the unrotated head.
// CHECK-LABEL: func.func @qk_norm
// CHECK: tbc.rope
// CHECK: tbc.rope
// CHECK-NOT: rope =
func.func @qk_norm(%x: tensor<?x?x32xf32>, %w: tensor<96x32xf32>, %g: tensor<16xf32>, %pos: tensor<?x?xi32>) -> (tensor<?x?x64xf32>, tensor<?x?x16xf32>) {
  %qkv = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<96x32xf32> -> tensor<?x?x96xf32>
  %q, %k, %v = tbc.split %qkv : tensor<?x?x96xf32> -> tensor<?x?x64xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
  %qn = tbc.rms_norm %q, %g eps = 1.0e-6 groups = 4 : tensor<?x?x64xf32>, tensor<16xf32>
  %kn = tbc.rms_norm %k, %g eps = 1.0e-6 : tensor<?x?x16xf32>, tensor<16xf32>
  %qr = tbc.rope neox %qn, %pos head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<?x?x64xf32>, tensor<?x?xi32>
  %kr = tbc.rope neox %kn, %pos head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<?x?x16xf32>, tensor<?x?xi32>
  return %qr, %kr : tensor<?x?x64xf32>, tensor<?x?x16xf32>
}

// -----

// Negative: the unrotated queries are needed too.
// CHECK-LABEL: func.func @escapes
// CHECK: tbc.rope
// CHECK-NOT: rope =
func.func @escapes(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %pos: tensor<?x?xi32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %q = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
  %qr = tbc.rope neox %q, %pos head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<?x?x64xf32>, tensor<?x?xi32>
  return %qr, %q : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// Negative: q and k rotated differently (theta) cannot share one epilogue,
// and a projection has only one.
// CHECK-LABEL: func.func @different
// CHECK: tbc.rope neox %{{.*}} theta = 1.000000e+04
// CHECK: tbc.rope neox %{{.*}} theta = 5.000000e+05
// CHECK-NOT: rope =
func.func @different(%x: tensor<?x?x32xf32>, %w: tensor<96x32xf32>, %pos: tensor<?x?xi32>) -> (tensor<?x?x64xf32>, tensor<?x?x16xf32>) {
  %qkv = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<96x32xf32> -> tensor<?x?x96xf32>
  %q, %k, %v = tbc.split %qkv : tensor<?x?x96xf32> -> tensor<?x?x64xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
  %qr = tbc.rope neox %q, %pos head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<?x?x64xf32>, tensor<?x?xi32>
  %kr = tbc.rope neox %k, %pos head_dim = 16 rotary_dim = 16 theta = 500000.0 : tensor<?x?x16xf32>, tensor<?x?xi32>
  return %qr, %kr : tensor<?x?x64xf32>, tensor<?x?x16xf32>
}

// -----

// Negative: GPT-NeoX's per-head [q k v] layout (a grouped split).
// CHECK-LABEL: func.func @grouped
// CHECK: tbc.rope
// CHECK-NOT: rope =
func.func @grouped(%x: tensor<?x?x32xf32>, %w: tensor<96x32xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x32xf32> {
  %qkv = tbc.linear %x, %w : tensor<?x?x32xf32>, tensor<96x32xf32> -> tensor<?x?x96xf32>
  %q, %k, %v = tbc.split %qkv groups = 2 : tensor<?x?x96xf32> -> tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  %qr = tbc.rope neox %q, %pos head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<?x?x32xf32>, tensor<?x?xi32>
  return %qr : tensor<?x?x32xf32>
}

// -----

// Negative: a projection with another epilogue.
// CHECK-LABEL: func.func @activation
// CHECK: tbc.rope
func.func @activation(%x: tensor<?x?x32xf32>, %w: tensor<32x32xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x32xf32> {
  %y = tbc.fused_linear %x, %w act = silu : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  %r = tbc.rope neox %y, %pos head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<?x?x32xf32>, tensor<?x?xi32>
  return %r : tensor<?x?x32xf32>
}
