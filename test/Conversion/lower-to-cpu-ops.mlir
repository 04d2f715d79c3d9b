// RUN: tbc-opt %s -split-input-file --tbc-outline-kernels --tbc-lower-to-cpu | FileCheck %s

// One case per op form the CPU lowering handles (lower-to-cpu.mlir has the
// projection tile and attention loop in detail): what must appear in each
// kernel for the op's semantics to be there at all.

// RMSNorm with Gemma's gain offset: sum of squares, then
// x * 1/sqrt(mean + eps) * (1 + w).
// CHECK-LABEL: func.func @k0_rms_norm(
// CHECK: ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[IN]], %[[IN]]
// CHECK-NEXT: arith.addf %[[ACC]], %[[SQ]]
// CHECK: arith.constant 3.125000e-02
// CHECK: math.sqrt
// CHECK: arith.divf
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00
// CHECK-NEXT: %[[G:.*]] = arith.addf %[[ONE]], %{{.*}}
// CHECK-NEXT: arith.mulf %{{.*}}, %[[G]]
func.func @rms(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %w = tbc.param "n.weight" : tensor<32xf32>
  %y = tbc.rms_norm %x, %w eps = 1.0e-05 gain_offset = 1.0 : tensor<?x?x32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// Grouped (per-head) RMSNorm: the row splits into [groups, width] and each
// group's mean divides by the group width (8), not the row's.
// CHECK-LABEL: func.func @k0_rms_norm(
// CHECK: memref.expand_shape %arg0 {{.*}} into memref<?x?x4x8xf32
// CHECK: memref.alloc({{.*}}) : memref<?x?x4xf32>
// CHECK: arith.constant 1.250000e-01
// CHECK-NOT: arith.addf %cst
func.func @rms_groups(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %w = tbc.param "n.weight" : tensor<8xf32>
  %y = tbc.rms_norm %x, %w eps = 1.0e-06 groups = 4 : tensor<?x?x32xf32>, tensor<8xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// LayerNorm with a bias: mean, then centred variance, then
// (x - mean) * rstd * w + b.
// CHECK-LABEL: func.func @k0_layer_norm(
// CHECK-SAME: %{{.*}}: memref<32xf32>, %{{.*}}: memref<32xf32>, %{{.*}}: memref<?x?x32xf32>)
// CHECK: arith.subf
// CHECK: math.sqrt
// CHECK: ^bb0(%[[X:.*]]: f32, %[[MEAN:.*]]: f32, %[[RSTD:.*]]: f32, %[[W:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[C:.*]] = arith.subf %[[X]], %[[MEAN]]
// CHECK-NEXT: %[[N:.*]] = arith.mulf %[[C]], %[[RSTD]]
// CHECK-NEXT: %[[S:.*]] = arith.mulf %[[N]], %[[W]]
// CHECK-NEXT: arith.addf %[[S]], %[[B]]
func.func @layer(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %w = tbc.param "n.weight" : tensor<32xf32>
  %b = tbc.param "n.bias" : tensor<32xf32>
  %y = tbc.layer_norm %x, %w, %b eps = 1.0e-05 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// LayerNorm without a bias takes no bias operand and adds none.
// CHECK-LABEL: func.func @k0_layer_norm(
// CHECK-SAME: %{{.*}}: memref<32xf32>, %{{.*}}: memref<?x?x32xf32>)
// CHECK: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %[[W:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[S:.*]] = arith.mulf %{{.*}}, %[[W]]
// CHECK-NEXT: linalg.yield %[[S]]
func.func @layer_nobias(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %w = tbc.param "n.weight" : tensor<32xf32>
  %y = tbc.layer_norm %x, %w eps = 1.0e-05 : tensor<?x?x32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// add_norm writes the sum (its first result) and normalises it from there.
// CHECK-LABEL: func.func @k0_add_norm(
// CHECK-SAME: %[[SUM:[a-z0-9]+]]: memref<?x?x32xf32>, %{{.*}}: memref<?x?x32xf32>)
// CHECK: linalg.generic {{.*}} outs(%[[SUM]] :
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[SUM]] :
// CHECK: math.sqrt
func.func @add_layer(%a: tensor<?x?x32xf32>, %c: tensor<?x?x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %w = tbc.param "n.weight" : tensor<32xf32>
  %b = tbc.param "n.bias" : tensor<32xf32>
  %s, %n = tbc.add_norm layer %a, %c, %w, %b eps = 1.0e-05 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %s, %n : tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// A norm-fused gated projection: the RMS statistic first (never the
// normalised tensor), the packed gate|up weight (96 rows = 3 panels), the
// register tile, then rstd on the accumulators and silu(gate) * up.
// CHECK-LABEL: func.func @k0_fused_linear(
// CHECK-SAME: %{{.*}}: memref<3x32x32xf32>, %{{.*}}: memref<?x?x48xf32>, %{{.*}}: memref<2xi64>)
// CHECK: math.sqrt
// CHECK-COUNT-16: vector.fma
// The single-row (decode) tile prefetches its panel into L2 ahead of its
// loads, one prefetch per cache line (a 128-byte panel row: two).
// CHECK: memref.prefetch %{{.*}}[%{{.*}}, %c0{{.*}}], read, locality<2>, data
// CHECK: memref.prefetch %{{.*}}[%{{.*}}, %c16{{.*}}], read, locality<2>, data
// CHECK: ^bb0(%[[G:.*]]: f32, %[[U:.*]]: f32, %[[R:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[GN:.*]] = arith.mulf %[[G]], %[[R]]
// CHECK-NEXT: %[[UN:.*]] = arith.mulf %[[U]], %[[R]]
// CHECK-NEXT: %[[NEG:.*]] = arith.negf %[[GN]]
// CHECK-NEXT: math.exp %[[NEG]]
// CHECK: %[[SILU:.*]] = arith.mulf %[[GN]], %{{.*}}
// CHECK-NEXT: arith.mulf %[[SILU]], %[[UN]]
func.func @fused_rms_glu(%x: tensor<?x?x32xf32>) -> tensor<?x?x48xf32> {
  %w = tbc.param "gu.weight" : tensor<96x32xf32>
  %y = tbc.fused_linear %x, %w norm = rms eps = 1.0e-05 act = silu glu : (tensor<?x?x32xf32>, tensor<96x32xf32>) -> tensor<?x?x48xf32>
  return %y : tensor<?x?x48xf32>
}

// -----

// A LayerNorm-fused projection with bias and GELU-tanh: the accumulator
// minus mean * rowsum(W'), times rstd, plus the folded bias, then GELU.
// CHECK-LABEL: func.func @k0_fused_linear(
// CHECK-SAME: %{{.*}}: memref<2x32x32xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<?x?x64xf32>, %{{.*}}: memref<2xi64>)
// CHECK: ^bb0(%[[Z:.*]]: f32, %[[BIAS:.*]]: f32, %[[CORR:.*]]: f32, %[[RSTD:.*]]: f32, %[[MEAN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[MC:.*]] = arith.mulf %[[MEAN]], %[[CORR]]
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[Z]], %[[MC]]
// CHECK-NEXT: %[[N:.*]] = arith.mulf %[[D]], %[[RSTD]]
// CHECK-NEXT: arith.addf %[[N]], %[[BIAS]]
// CHECK: math.tanh
func.func @fused_layer_bias_gelu(%x: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  %w = tbc.param "fc.weight" : tensor<64x32xf32>
  %b = tbc.param "fc.bias" : tensor<64xf32>
  %c = tbc.param "fc.corr" : tensor<64xf32>
  %y = tbc.fused_linear %x, %w bias(%b) mean_correction(%c) norm = layer eps = 1.0e-05 act = gelu_tanh : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// A soft-cap epilogue (Gemma 2's LM head): cap * tanh(z / cap), no norm.
// CHECK-LABEL: func.func @k0_fused_linear(
// CHECK-NOT: math.sqrt
// CHECK: arith.constant 3.000000e+01
// CHECK: arith.divf
// CHECK-NEXT: math.tanh
// CHECK-NEXT: arith.mulf
func.func @fused_softcap(%x: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  %w = tbc.param "head.weight" : tensor<64x32xf32>
  %y = tbc.fused_linear %x, %w softcap = 30.0 : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// A residual with a soft-cap: the residual is added after the cap, the
// epilogue's last step.
// CHECK-LABEL: func.func @k0_fused_linear(
// CHECK: ^bb0(%[[Z:.*]]: f32, %[[RES:.*]]: f32, %{{.*}}: f32):
// CHECK: math.tanh
// CHECK-NEXT: %[[CAP:.*]] = arith.mulf
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[CAP]], %[[RES]]
// CHECK-NEXT: linalg.yield %[[SUM]]
func.func @fused_softcap_residual(%x: tensor<?x?x32xf32>, %h: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %w = tbc.param "head.weight" : tensor<64x32xf32>
  %y = tbc.fused_linear %x, %w residual(%h) softcap = 30.0 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// A plain projection with bias and residual (a block's output projection):
// the output starts as residual + bias and the tile accumulates onto it; no
// accumulator buffer, no epilogue pass.
// CHECK-LABEL: func.func @k0_fused_linear(
// CHECK-SAME: %{{.*}}: memref<?x?x32xf32{{.*}}>, %{{.*}}: memref<2x32x32xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<?x?x64xf32{{.*}}>, %{{.*}}: memref<?x?x64xf32{{.*}}>, %{{.*}}: memref<2xi64>)
// CHECK-NOT: memref.alloc
// CHECK: ^bb0(%[[RES:.*]]: f32, %[[BIAS:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[INIT:.*]] = arith.addf %[[RES]], %[[BIAS]]
// CHECK-NEXT: linalg.yield %[[INIT]]
// CHECK: vector.fma
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @fused_bias_residual(%x: tensor<?x?x32xf32>, %h: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %w = tbc.param "o.weight" : tensor<64x32xf32>
  %b = tbc.param "o.bias" : tensor<64xf32>
  %y = tbc.fused_linear %x, %w bias(%b) residual(%h) : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// NeoX RoPE: a constant table of rotary_dim / 2 inverse frequencies, the
// partner half a head away (first half: +8, second: -8), sin and cos.
// CHECK: memref.global "private" constant @rope_inv_freq_0 : memref<8xf32> = dense<[1.000000e+00, 0.316227764,
// CHECK-LABEL: func.func @k0_rope(
// CHECK: memref.get_global @rope_inv_freq_0
// CHECK: arith.remui %{{.*}}, %c16
// CHECK: arith.cmpi ult, %{{.*}}, %c8
// CHECK: math.cos
// CHECK: math.sin
func.func @rope_neox(%x: tensor<?x?x64xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x64xf32> {
  %y = tbc.rope neox %x, %pos head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<?x?x64xf32>, tensor<?x?xi32>
  return %y : tensor<?x?x64xf32>
}

// -----

// YaRN: one table (the blend is a compile-time constant); cos and sin are
// scaled by the attention factor.
// CHECK: memref.global "private" constant @rope_inv_freq_0 : memref<8xf32>
// CHECK-LABEL: func.func @k0_rope(
// CHECK: %[[COS:.*]] = math.cos
// CHECK: %[[SIN:.*]] = math.sin
// CHECK: arith.mulf %[[COS]], %cst
// CHECK: arith.mulf %[[SIN]], %cst
func.func @rope_yarn(%x: tensor<?x?x64xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x64xf32> {
  %y = tbc.rope neox %x, %pos head_dim = 16 rotary_dim = 16 theta = 10000.0
         scaling = <kind = yarn, factor = 4.0, original_max_position = 2048, attention_factor = 1.25>
         : tensor<?x?x64xf32>, tensor<?x?xi32>
  return %y : tensor<?x?x64xf32>
}

// -----

// LongRoPE: the short factors' frequencies, then the long ones'; a row whose
// sequence is longer than original_max_position reads the second half.
// CHECK: memref.global "private" constant @rope_inv_freq_0 : memref<8xf32> = dense<[1.000000e+00, 0.0833333358, 0.00666666683, 5.000000e-04, 1.000000e+00, 4.000000e-02, 2.500000e-03, 1.250000e-04]>
// CHECK-LABEL: func.func @k0_rope(
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1, %arg2 :
// CHECK: ^bb0(%{{.*}}: f32, %{{.*}}: i32, %[[L:.*]]: i32,
// CHECK: %[[LONG:.*]] = arith.cmpi sgt, %[[L]], %c13_i32
// CHECK: %[[SHIFTED:.*]] = arith.addi %{{.*}}, %c4
// CHECK: arith.select %[[LONG]], %[[SHIFTED]]
func.func @rope_longrope(%x: tensor<?x?x64xf32>, %pos: tensor<?x?xi32>, %len: tensor<?x?xi32>) -> tensor<?x?x64xf32> {
  %y = tbc.rope neox %x, %pos lengths(%len) head_dim = 16 rotary_dim = 8 theta = 10000.0
         scaling = <kind = longrope, factor = 4.923, original_max_position = 13, attention_factor = 1.27,
                    short_factor = [1.0, 1.2, 1.5, 2.0], long_factor = [1.0, 2.5, 4.0, 8.0]>
         : tensor<?x?x64xf32>, tensor<?x?xi32>, tensor<?x?xi32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Dynamic NTK: past the original length the base grows with the sequence
// (a pow per frequency, in f32); within it the constant table is read.
// CHECK-LABEL: func.func @k0_rope(
// CHECK: %[[LONG:.*]] = arith.cmpi sgt, %{{.*}}, %c10_i32
// CHECK: math.powf
// CHECK: math.powf
// CHECK: %[[KEPT:.*]] = memref.load
// CHECK: arith.select %[[LONG]], %{{.*}}, %[[KEPT]]
func.func @rope_dynamic(%x: tensor<?x?x64xf32>, %pos: tensor<?x?xi32>, %len: tensor<?x?xi32>) -> tensor<?x?x64xf32> {
  %y = tbc.rope neox %x, %pos lengths(%len) head_dim = 16 rotary_dim = 16 theta = 10000.0
         scaling = <kind = dynamic, factor = 2.0, original_max_position = 10>
         : tensor<?x?x64xf32>, tensor<?x?xi32>, tensor<?x?xi32>
  return %y : tensor<?x?x64xf32>
}

// -----

// GPT-J RoPE on 8 of 16 dims: pairs are adjacent (even/odd), the table has
// 4 entries with exponents over the rotary dim, dims past 8 pass through.
// CHECK: memref.global "private" constant @rope_inv_freq_0 : memref<4xf32> = dense<[1.000000e+00, 1.000000e-01, 0.00999999977, 1.000000e-03]>
// CHECK-LABEL: func.func @k0_rope(
// CHECK: %[[D:.*]] = arith.remui %{{.*}}, %c16
// CHECK: %[[ROT:.*]] = arith.cmpi ult, %[[D]], %c8
// CHECK: %[[ODD:.*]] = arith.remui %[[D]], %c2
// CHECK: arith.cmpi eq, %[[ODD]], %c0
// CHECK: arith.select %[[ROT]], %{{.*}}, %in
func.func @rope_gptj_partial(%x: tensor<?x?x64xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x64xf32> {
  %y = tbc.rope gptj %x, %pos head_dim = 16 rotary_dim = 8 theta = 10000.0 : tensor<?x?x64xf32>, tensor<?x?xi32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Linear RoPE scaling divides every frequency by the factor (4) in the table.
// CHECK: memref.global "private" constant @rope_inv_freq_0 : memref<8xf32> = dense<[2.500000e-01, 0.0790569409,
func.func @rope_scaled(%x: tensor<?x?x64xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x64xf32> {
  %y = tbc.rope neox %x, %pos head_dim = 16 rotary_dim = 16 theta = 10000.0 scaling = <kind = linear, factor = 4.0> : tensor<?x?x64xf32>, tensor<?x?xi32>
  return %y : tensor<?x?x64xf32>
}

// -----

// The embedding table is read packed like a projection weight (40 rows =
// 2 panels): row r is column r % 32 of panel r / 32, times the scale.
// CHECK-LABEL: func.func @k0_embedding(
// CHECK-SAME: %{{.*}}: memref<2x16x32xf32>,
// CHECK: arith.divui %{{.*}}, %c32
// CHECK: arith.remui %{{.*}}, %c32
// CHECK: arith.constant 4.000000e+00
func.func @embedding(%ids: tensor<?x?xi32>) -> tensor<?x?x16xf32> {
  %t = tbc.param "embed.weight" : tensor<40x16xf32>
  %h = tbc.embedding %t[%ids] scale = 4.0 : tensor<40x16xf32>, tensor<?x?xi32>
  return %h : tensor<?x?x16xf32>
}

// -----

// GQA attention (4 query heads on 2 key/value heads) with a sliding window
// of 8 and a logit soft-cap: the first visible key is clamped to p - 7,
// query head h reads key/value head h / 2, logits go through tanh before
// the running max; each score's dot product is summed as a tree, and the
// softmax's exponentials are taken 16 at a time.
// CHECK-LABEL: func.func @k0_attention(
// CHECK-SAME: %{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x32xf32>, %{{.*}}: memref<2xi64>)
// CHECK: arith.cmpi ugt, %{{.*}}, %c8
// CHECK: arith.divui %{{.*}}, %c2
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc> : vector<16xf32> into f32
// CHECK: %[[T:.*]] = math.tanh
// CHECK-NEXT: %[[L:.*]] = arith.mulf %{{.*}}, %[[T]]
// CHECK: arith.maxnumf %{{.*}}, %[[L]]
// CHECK: math.exp %{{.*}} : vector<16xf32>
// CHECK: math.exp %{{.*}} : f32
func.func @attention_window_softcap_gqa(%q: tensor<?x?x64xf32>, %k: tensor<?x?x32xf32>, %v: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  %a = tbc.attention %q, %k, %v heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 causal window = 8 softcap = 50.0 : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  return %a : tensor<?x?x64xf32>
}

// -----

// Pointwise ops: exact GELU through erf, ReLU as a maximum, a soft-cap,
// the residual add.
// CHECK-LABEL: func.func @k0_glu(
// CHECK: math.erf
// CHECK-LABEL: func.func @k1_activation(
// CHECK: arith.maximumf %in, %cst
// CHECK-LABEL: func.func @k2_softcap(
// CHECK: math.tanh
// CHECK-LABEL: func.func @k3_add(
// CHECK: arith.addf %in, %in_
func.func @pointwise(%x: tensor<?x?x32xf32>, %y: tensor<?x?x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %g = tbc.glu gelu %x, %y : tensor<?x?x32xf32>
  %r = tbc.activation relu %x : tensor<?x?x32xf32>
  %c = tbc.softcap %x cap = 30.0 : tensor<?x?x32xf32>
  %s = tbc.add %x, %y : tensor<?x?x32xf32>
  return %g, %r, %c, %s : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Sinusoidal positions: base^(2i/d) per pair, sin on even dims, cos on odd.
// CHECK-LABEL: func.func @k0_sinusoidal_positions(
// CHECK: %[[ODD:.*]] = arith.remui %{{.*}}, %c2
// CHECK: math.powf
// CHECK: %[[ISODD:.*]] = arith.cmpi ne, %[[ODD]], %c0
// CHECK-NEXT: %[[SIN:.*]] = math.sin
// CHECK-NEXT: %[[COS:.*]] = math.cos
// CHECK-NEXT: arith.select %[[ISODD]], %[[COS]], %[[SIN]]
func.func @sinusoidal(%pos: tensor<?x?xi32>) -> tensor<?x?x16xf32> {
  %pe = tbc.sinusoidal_positions %pos base = 10000.0 : tensor<?x?xi32> -> tensor<?x?x16xf32>
  return %pe : tensor<?x?x16xf32>
}
