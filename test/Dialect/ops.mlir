// RUN: tbc-opt %s | FileCheck %s
// RUN: tbc-opt %s | tbc-opt | FileCheck %s
// RUN: tbc-opt %s --mlir-print-op-generic | tbc-opt | FileCheck %s

// Round trip of every core op in its custom assembly format.

// CHECK-LABEL: func.func @params
func.func @params() -> (tensor<4x8xf32>, tensor<8xbf16>, tensor<2x3x4xf16>) {
  // CHECK: tbc.param "model.embed_tokens.weight" : tensor<4x8xf32>
  %0 = tbc.param "model.embed_tokens.weight" : tensor<4x8xf32>
  // CHECK: tbc.param "model.norm.weight" : tensor<8xbf16>
  %1 = tbc.param "model.norm.weight" : tensor<8xbf16>
  %2 = tbc.param "x" : tensor<2x3x4xf16>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<8xbf16>, tensor<2x3x4xf16>
}

// CHECK-LABEL: func.func @embedding
func.func @embedding(%ids: tensor<?x?xi32>, %t: tensor<100x16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  // CHECK: tbc.embedding %{{.*}}[%{{.*}}] : tensor<100x16xf32>, tensor<?x?xi32>
  %0 = tbc.embedding %t[%ids] : tensor<100x16xf32>, tensor<?x?xi32>
  // CHECK: tbc.embedding %{{.*}}[%{{.*}}] scale = 4.000000e+00 : tensor<100x16xf32>, tensor<?x?xi32>
  %1 = tbc.embedding %t[%ids] scale = 4.0 : tensor<100x16xf32>, tensor<?x?xi32>
  return %0, %1 : tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<?x?x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>, %hw: tensor<4xf32>)
    -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  // CHECK: tbc.rms_norm %{{.*}}, %{{.*}} eps = 9.9999999999999995E-7 : tensor<?x?x16xf32>, tensor<16xf32>
  %0 = tbc.rms_norm %x, %w eps = 1.0e-6 : tensor<?x?x16xf32>, tensor<16xf32>
  // CHECK: tbc.rms_norm %{{.*}}, %{{.*}} eps = 9.9999999999999995E-7 gain_offset = 1.000000e+00 : tensor<?x?x16xf32>, tensor<16xf32>
  %1 = tbc.rms_norm %x, %w eps = 1.0e-6 gain_offset = 1.0 : tensor<?x?x16xf32>, tensor<16xf32>
  // CHECK: tbc.rms_norm %{{.*}}, %{{.*}} eps = 9.9999999999999995E-7 groups = 4 : tensor<?x?x16xf32>, tensor<4xf32>
  %2 = tbc.rms_norm %x, %hw eps = 1.0e-6 groups = 4 : tensor<?x?x16xf32>, tensor<4xf32>
  // CHECK: tbc.layer_norm %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>
  %3 = tbc.layer_norm %x, %w, %b eps = 1.0e-5 : tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK: tbc.layer_norm %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<?x?x16xf32>, tensor<16xf32>
  %4 = tbc.layer_norm %x, %w eps = 1.0e-5 : tensor<?x?x16xf32>, tensor<16xf32>
  // CHECK: tbc.layer_norm %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 gain_offset = 1.000000e+00 : tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>
  %5 = tbc.layer_norm %x, %w, %b eps = 1.0e-5 gain_offset = 1.0 : tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// Per-head norms: one gain shared by the heads, or each head's own, flat
// ([heads * head_dim]) or stacked ([heads, head_dim]).
// CHECK-LABEL: func.func @grouped_norms
func.func @grouped_norms(%x: tensor<?x?x16xf32>, %w: tensor<16xf32>, %hw: tensor<4xf32>, %sw: tensor<4x4xf32>)
    -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  // CHECK: tbc.rms_norm %{{.*}}, %{{.*}} eps = 9.9999999999999995E-7 groups = 4 : tensor<?x?x16xf32>, tensor<16xf32>
  %0 = tbc.rms_norm %x, %w eps = 1.0e-6 groups = 4 : tensor<?x?x16xf32>, tensor<16xf32>
  // CHECK: tbc.rms_norm %{{.*}}, %{{.*}} eps = 9.9999999999999995E-7 groups = 4 : tensor<?x?x16xf32>, tensor<4x4xf32>
  %1 = tbc.rms_norm %x, %sw eps = 1.0e-6 groups = 4 : tensor<?x?x16xf32>, tensor<4x4xf32>
  // CHECK: tbc.layer_norm %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 groups = 4 : tensor<?x?x16xf32>, tensor<4xf32>, tensor<4xf32>
  %2 = tbc.layer_norm %x, %hw, %hw eps = 1.0e-5 groups = 4 : tensor<?x?x16xf32>, tensor<4xf32>, tensor<4xf32>
  // CHECK: tbc.layer_norm %{{.*}}, %{{.*}} eps = 1.000000e-05 groups = 4 : tensor<?x?x16xf32>, tensor<4x4xf32>
  %3 = tbc.layer_norm %x, %sw eps = 1.0e-5 groups = 4 : tensor<?x?x16xf32>, tensor<4x4xf32>
  return %0, %1, %2, %3 : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// CHECK-LABEL: func.func @projections
func.func @projections(%x: tensor<?x?x16xf32>, %w: tensor<48x16xf32>, %b: tensor<48xf32>, %wt: tensor<16x48xf32>)
    -> (tensor<?x?x48xf32>, tensor<?x?x48xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
  // CHECK: tbc.linear %{{.*}}, %{{.*}} : tensor<?x?x16xf32>, tensor<48x16xf32> -> tensor<?x?x48xf32>
  %0 = tbc.linear %x, %w : tensor<?x?x16xf32>, tensor<48x16xf32> -> tensor<?x?x48xf32>
  // CHECK: tbc.linear %{{.*}}, %{{.*}}, %{{.*}} weight_in_out : tensor<?x?x16xf32>, tensor<16x48xf32>, tensor<48xf32> -> tensor<?x?x48xf32>
  %1 = tbc.linear %x, %wt, %b weight_in_out : tensor<?x?x16xf32>, tensor<16x48xf32>, tensor<48xf32> -> tensor<?x?x48xf32>
  // CHECK: tbc.split %{{.*}} groups = 2 : tensor<?x?x48xf32> -> tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
  %q, %k, %v = tbc.split %1 groups = 2 : tensor<?x?x48xf32> -> tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
  // CHECK: tbc.split %{{.*}} : tensor<?x?x16xf32> -> tensor<?x?x8xf32>, tensor<?x?x8xf32>
  %g, %u = tbc.split %q : tensor<?x?x16xf32> -> tensor<?x?x8xf32>, tensor<?x?x8xf32>
  return %0, %1, %k, %g : tensor<?x?x48xf32>, tensor<?x?x48xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @rope
func.func @rope(%x: tensor<?x?x64xf32>, %pos: tensor<?x?xi32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  // CHECK: tbc.rope neox %{{.*}}, %{{.*}} head_dim = 16 rotary_dim = 16 theta = 1.000000e+04 : tensor<?x?x64xf32>, tensor<?x?xi32>
  %0 = tbc.rope neox %x, %pos head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<?x?x64xf32>, tensor<?x?xi32>
  // CHECK: tbc.rope gptj %{{.*}}, %{{.*}} head_dim = 16 rotary_dim = 4 theta = 1.000000e+04 scaling = <kind = linear, factor = 8.000000e+00>
  %1 = tbc.rope gptj %x, %pos head_dim = 16 rotary_dim = 4 theta = 10000.0
         scaling = <kind = linear, factor = 8.0> : tensor<?x?x64xf32>, tensor<?x?xi32>
  // CHECK: scaling = <kind = llama3, factor = 8.000000e+00, high_freq_factor = 2.000000e+00, original_max_position = 4096>
  %2 = tbc.rope neox %x, %pos head_dim = 16 rotary_dim = 16 theta = 500000.0
         scaling = <kind = llama3, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 2.0, original_max_position = 4096>
         : tensor<?x?x64xf32>, tensor<?x?xi32>
  return %0, %1, %2 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// CHECK-LABEL: func.func @attention_window_value
func.func @attention_window_value(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>, %w: i64)
    -> tensor<?x?x64xf32> {
  // CHECK: tbc.attention %{{.*}}, %{{.*}}, %{{.*}} window(%{{.*}}) heads = 4 kv_heads = 2 head_dim = 16 scale = 2.500000e-01 causal :
  %0 = tbc.attention %q, %kv, %kv window(%w) heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 causal
         : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  return %0 : tensor<?x?x64xf32>
}

// CHECK-LABEL: func.func @rope_long_context
func.func @rope_long_context(%x: tensor<?x?x64xf32>, %pos: tensor<?x?xi32>, %len: tensor<?x?xi32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  // CHECK: scaling = <kind = yarn, factor = 4.000000e+00, original_max_position = 32768, attention_factor = 1.138600e+00, beta_fast = 1.600000e+01, truncate = false>
  %0 = tbc.rope neox %x, %pos head_dim = 16 rotary_dim = 16 theta = 1000000.0
         scaling = <kind = yarn, factor = 4.0, original_max_position = 32768, attention_factor = 1.1386, beta_fast = 16.0, truncate = false>
         : tensor<?x?x64xf32>, tensor<?x?xi32>
  // CHECK: tbc.rope neox %{{.*}}, %{{.*}} lengths(%{{.*}}) head_dim = 16 rotary_dim = 4 theta = 1.000000e+04 scaling = <kind = longrope, factor = 3.200000e+01, original_max_position = 4096, attention_factor = 1.190000e+00, short_factor = [1.000000e+00, 1.500000e+00], long_factor = [2.000000e+00, 4.000000e+00]> : tensor<?x?x64xf32>, tensor<?x?xi32>, tensor<?x?xi32>
  %1 = tbc.rope neox %x, %pos lengths(%len) head_dim = 16 rotary_dim = 4 theta = 10000.0
         scaling = <kind = longrope, factor = 32.0, original_max_position = 4096, attention_factor = 1.19,
                    short_factor = [1.0, 1.5], long_factor = [2.0, 4.0]>
         : tensor<?x?x64xf32>, tensor<?x?xi32>, tensor<?x?xi32>
  // CHECK: scaling = <kind = dynamic, factor = 2.000000e+00, original_max_position = 2048>
  %2 = tbc.rope neox %x, %pos lengths(%len) head_dim = 16 rotary_dim = 16 theta = 10000.0
         scaling = <kind = dynamic, factor = 2.0, original_max_position = 2048>
         : tensor<?x?x64xf32>, tensor<?x?xi32>, tensor<?x?xi32>
  return %0, %1, %2 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// CHECK-LABEL: func.func @attention_position_bias
func.func @attention_position_bias(%q: tensor<?x?x64xf32>, %table: tensor<32x4xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  // CHECK: tbc.attention %{{.*}}, %{{.*}}, %{{.*}} heads = 4 kv_heads = 4 head_dim = 16 scale = 2.500000e-01 causal alibi_slopes = [2.500000e-01, 6.250000e-02, 1.562500e-02, 3.906250e-03] :
  %0 = tbc.attention %q, %q, %q heads = 4 kv_heads = 4 head_dim = 16 scale = 0.25 causal
         alibi_slopes = [0.25, 0.0625, 0.015625, 0.00390625]
         : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  // CHECK: tbc.attention %{{.*}}, %{{.*}}, %{{.*}} relative_bias %{{.*}} heads = 4 kv_heads = 4 head_dim = 16 scale = 1.000000e+00 buckets = <num_buckets = 32, max_distance = 128, bidirectional = true> : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<32x4xf32>
  %1 = tbc.attention %q, %q, %q relative_bias %table heads = 4 kv_heads = 4 head_dim = 16 scale = 1.0
         buckets = <num_buckets = 32, max_distance = 128, bidirectional = true>
         : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<32x4xf32>
  return %0, %1 : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// CHECK-LABEL: func.func @clip
func.func @clip(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  // CHECK: tbc.clip %{{.*}} limit = 8.000000e+00 : tensor<?x?x64xf32>
  %0 = tbc.clip %x limit = 8.0 : tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>, %mq: tensor<?x?x16xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  // CHECK: tbc.attention %{{.*}}, %{{.*}}, %{{.*}} heads = 4 kv_heads = 4 head_dim = 16 scale = 2.500000e-01 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  %0 = tbc.attention %q, %q, %q heads = 4 kv_heads = 4 head_dim = 16 scale = 0.25 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  // CHECK: tbc.attention %{{.*}}, %{{.*}}, %{{.*}} heads = 4 kv_heads = 2 head_dim = 16 scale = 2.500000e-01 causal window = 4096 softcap = 5.000000e+01
  %1 = tbc.attention %q, %kv, %kv heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 causal window = 4096 softcap = 50.0
         : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  // CHECK: heads = 4 kv_heads = 1 head_dim = 16 scale = 2.500000e-01 causal :
  %2 = tbc.attention %q, %mq, %mq heads = 4 kv_heads = 1 head_dim = 16 scale = 0.25 causal
         : tensor<?x?x64xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
  return %0, %1, %2 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// CHECK-LABEL: func.func @pointwise
func.func @pointwise(%a: tensor<?x?x32xbf16>, %b: tensor<?x?x32xbf16>) -> tensor<?x?x32xbf16> {
  // CHECK: tbc.glu silu %{{.*}}, %{{.*}} : tensor<?x?x32xbf16>
  %0 = tbc.glu silu %a, %b : tensor<?x?x32xbf16>
  // CHECK: tbc.glu gelu_tanh
  %1 = tbc.glu gelu_tanh %0, %b : tensor<?x?x32xbf16>
  // CHECK: tbc.glu relu
  %2 = tbc.glu relu %1, %b : tensor<?x?x32xbf16>
  // CHECK: tbc.glu sigmoid
  %3 = tbc.glu sigmoid %2, %b : tensor<?x?x32xbf16>
  // CHECK: tbc.activation gelu %{{.*}} : tensor<?x?x32xbf16>
  %4 = tbc.activation gelu %3 : tensor<?x?x32xbf16>
  // CHECK: tbc.softcap %{{.*}} cap = 3.000000e+01 : tensor<?x?x32xbf16>
  %5 = tbc.softcap %4 cap = 30.0 : tensor<?x?x32xbf16>
  // CHECK: tbc.add %{{.*}}, %{{.*}} : tensor<?x?x32xbf16>
  %6 = tbc.add %5, %a : tensor<?x?x32xbf16>
  // CHECK: tbc.scale %{{.*}} by 6.250000e-02 : tensor<?x?x32xbf16>
  %7 = tbc.scale %6 by 0.0625 : tensor<?x?x32xbf16>
  return %7 : tensor<?x?x32xbf16>
}

// CHECK-LABEL: func.func @sinusoidal
func.func @sinusoidal(%pos: tensor<?x?xi32>) -> tensor<?x?x16xf32> {
  // CHECK: tbc.sinusoidal_positions %{{.*}} base = 1.000000e+04 : tensor<?x?xi32> -> tensor<?x?x16xf32>
  %0 = tbc.sinusoidal_positions %pos base = 10000.0 : tensor<?x?xi32> -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}
