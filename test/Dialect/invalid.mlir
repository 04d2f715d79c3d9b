// RUN: tbc-opt %s -split-input-file -verify-diagnostics

// One case per verifier message.

func.func @param_empty_name() {
  // expected-error @+1 {{parameter name must not be empty}}
  %0 = tbc.param "" : tensor<4xf32>
  return
}

// -----

func.func @param_dynamic_shape() {
  // expected-error @+1 {{parameter 'w' must have a static shape}}
  %0 = tbc.param "w" : tensor<?xf32>
  return
}

// -----

func.func @param_integer(%x: tensor<4xi32>) {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = tbc.param "w" : tensor<4xi32>
  return
}

// -----

func.func @embedding_table_rank(%t: tensor<10xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{'tbc.embedding' table must be [vocab, hidden], got rank 1}}
  %0 = tbc.embedding %t[%ids] : tensor<10xf32>, tensor<?xi32>
  return
}

// -----

func.func @embedding_float_ids(%t: tensor<10x4xf32>, %ids: tensor<?xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = tbc.embedding %t[%ids] : tensor<10x4xf32>, tensor<?xf32>
  return
}

// -----

func.func @embedding_scale(%t: tensor<10x4xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{'scale' must be positive, got 0}}
  %0 = tbc.embedding %t[%ids] scale = 0.0 : tensor<10x4xf32>, tensor<?xi32>
  return
}

// -----

func.func @rms_norm_weight_length(%x: tensor<?x16xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight length 8 does not match the hidden size 16}}
  %0 = tbc.rms_norm %x, %w eps = 1.0e-6 : tensor<?x16xf32>, tensor<8xf32>
  return
}

// -----

func.func @rms_norm_group_length(%x: tensor<?x16xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight length 8 times groups 4 does not match the hidden size 16}}
  %0 = tbc.rms_norm %x, %w eps = 1.0e-6 groups = 4 : tensor<?x16xf32>, tensor<8xf32>
  return
}

// -----

func.func @rms_norm_group_gains_shape(%x: tensor<?x16xf32>, %w: tensor<2x8xf32>) {
  // expected-error @+1 {{weight of shape [2, 8] is not [groups, hidden / groups] = [4, 4]}}
  %0 = tbc.rms_norm %x, %w eps = 1.0e-6 groups = 4 : tensor<?x16xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @rms_norm_groups_divide(%x: tensor<?x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{hidden size 16 is not a multiple of groups 3}}
  %0 = tbc.rms_norm %x, %w eps = 1.0e-6 groups = 3 : tensor<?x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @rms_norm_negative_eps(%x: tensor<?x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{'eps' must be non-negative, got -1.000000e-06}}
  %0 = tbc.rms_norm %x, %w eps = -1.0e-6 : tensor<?x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @rms_norm_groups(%x: tensor<?x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{'groups' must be positive, got 0}}
  %0 = tbc.rms_norm %x, %w eps = 1.0e-6 groups = 0 : tensor<?x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @rms_norm_weight_rank(%x: tensor<?x16xf32>, %w: tensor<4x4xf32>) {
  // expected-error @+1 {{weight must be rank 1, got rank 2}}
  %0 = tbc.rms_norm %x, %w eps = 1.0e-6 : tensor<?x16xf32>, tensor<4x4xf32>
  return
}

// -----

func.func @rms_norm_dynamic_hidden(%x: tensor<?x?xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{input feature dimension must be static}}
  %0 = tbc.rms_norm %x, %w eps = 1.0e-6 : tensor<?x?xf32>, tensor<16xf32>
  return
}

// -----

func.func @rms_norm_scalar(%x: tensor<f32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{input must have rank >= 1}}
  %0 = tbc.rms_norm %x, %w eps = 1.0e-6 : tensor<f32>, tensor<16xf32>
  return
}

// -----

func.func @layer_norm_weight_length(%x: tensor<?x16xf32>, %w: tensor<12xf32>) {
  // expected-error @+1 {{weight length 12 does not match the hidden size 16}}
  %0 = tbc.layer_norm %x, %w eps = 1.0e-5 : tensor<?x16xf32>, tensor<12xf32>
  return
}

// -----

func.func @layer_norm_bias_length(%x: tensor<?x16xf32>, %w: tensor<16xf32>, %b: tensor<15xf32>) {
  // expected-error @+1 {{bias shape must be the weight's, got 'tensor<15xf32>' and 'tensor<16xf32>'}}
  %0 = tbc.layer_norm %x, %w, %b eps = 1.0e-5 : tensor<?x16xf32>, tensor<16xf32>, tensor<15xf32>
  return
}

// -----

func.func @layer_norm_group_bias_shape(%x: tensor<?x16xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{bias shape must be the weight's, got 'tensor<4xf32>' and 'tensor<4x4xf32>'}}
  %0 = tbc.layer_norm %x, %w, %b eps = 1.0e-5 groups = 4 : tensor<?x16xf32>, tensor<4x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @layer_norm_group_length(%x: tensor<?x16xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight length 8 times groups 4 does not match the hidden size 16}}
  %0 = tbc.layer_norm %x, %w eps = 1.0e-5 groups = 4 : tensor<?x16xf32>, tensor<8xf32>
  return
}

// -----

func.func @layer_norm_negative_eps(%x: tensor<?x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{'eps' must be non-negative}}
  %0 = tbc.layer_norm %x, %w eps = -1.0 : tensor<?x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @linear_in_features(%x: tensor<?x16xf32>, %w: tensor<32x8xf32>) {
  // expected-error @+1 {{input has 16 features but the weight expects 8 (weight is [out, in])}}
  %0 = tbc.linear %x, %w : tensor<?x16xf32>, tensor<32x8xf32> -> tensor<?x32xf32>
  return
}

// -----

func.func @linear_in_out_features(%x: tensor<?x16xf32>, %w: tensor<32x16xf32>) {
  // expected-error @+1 {{input has 16 features but the weight expects 32 (weight is [in, out])}}
  %0 = tbc.linear %x, %w weight_in_out : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @linear_bias_length(%x: tensor<?x16xf32>, %w: tensor<32x16xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{bias length 16 does not match the 32 output features}}
  %0 = tbc.linear %x, %w, %b : tensor<?x16xf32>, tensor<32x16xf32>, tensor<16xf32> -> tensor<?x32xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<?x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{weight must be rank 2, got rank 1}}
  %0 = tbc.linear %x, %w : tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @linear_wrong_result(%x: tensor<?x16xf32>, %w: tensor<32x16xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<?x32xf32>' are incompatible with return type(s) of operation 'tensor<?x16xf32>'}}
  %0 = tbc.linear %x, %w : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @split_widths(%x: tensor<?x48xf32>) {
  // expected-error @+1 {{result widths sum to 32 but the input has 48 features}}
  %0:2 = tbc.split %x : tensor<?x48xf32> -> tensor<?x16xf32>, tensor<?x16xf32>
  return
}

// -----

func.func @split_groups(%x: tensor<?x48xf32>) {
  // expected-error @+1 {{result #0 width 18 must be static and divisible by groups 4}}
  %0:2 = tbc.split %x groups = 4 : tensor<?x48xf32> -> tensor<?x18xf32>, tensor<?x30xf32>
  return
}

// -----

func.func @split_rank(%x: tensor<?x48xf32>) {
  // expected-error @+1 {{input and result must have the same rank, got 2 and 3}}
  %0:2 = tbc.split %x : tensor<?x48xf32> -> tensor<?x1x24xf32>, tensor<?x1x24xf32>
  return
}

// -----

func.func @split_element_type(%x: tensor<?x48xf32>) {
  // expected-error @+1 {{result #1 must have the input's element type}}
  %0:2 = tbc.split %x : tensor<?x48xf32> -> tensor<?x24xf32>, tensor<?x24xf16>
  return
}

// -----

func.func @split_no_results(%x: tensor<?x48xf32>) {
  // expected-error @+1 {{must produce at least one result}}
  "tbc.split"(%x) : (tensor<?x48xf32>) -> ()
  return
}

// -----

func.func @split_zero_groups(%x: tensor<?x48xf32>) {
  // expected-error @+1 {{'groups' must be positive, got 0}}
  %0 = tbc.split %x groups = 0 : tensor<?x48xf32> -> tensor<?x48xf32>
  return
}

// -----

func.func @rope_odd_rotary(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{'rotary_dim' must be even, got 15}}
  %0 = tbc.rope neox %x, %p head_dim = 16 rotary_dim = 15 theta = 10000.0 : tensor<?x?x64xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_rotary_too_big(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{'rotary_dim' 32 exceeds 'head_dim' 16}}
  %0 = tbc.rope neox %x, %p head_dim = 16 rotary_dim = 32 theta = 10000.0 : tensor<?x?x64xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_theta(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{'theta' must be positive, got -1}}
  %0 = tbc.rope neox %x, %p head_dim = 16 rotary_dim = 16 theta = -1.0 : tensor<?x?x64xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_head_dim(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{'head_dim' must be positive, got 0}}
  %0 = tbc.rope neox %x, %p head_dim = 0 rotary_dim = 16 theta = 1.0 : tensor<?x?x64xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_width(%x: tensor<?x?x60xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{input width 60 is not a multiple of 'head_dim' 16}}
  %0 = tbc.rope neox %x, %p head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<?x?x60xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_positions_rank(%x: tensor<?x?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{positions must have rank 2 (the input without its feature dimension)}}
  %0 = tbc.rope neox %x, %p head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<?x?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_positions_shape(%x: tensor<2x5x64xf32>, %p: tensor<2x4xi32>) {
  // expected-error @+1 {{positions disagree with the input in dimension 1}}
  %0 = tbc.rope neox %x, %p head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<2x5x64xf32>, tensor<2x4xi32>
  return
}

// -----

func.func @rope_scaling_factor(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{rope scaling factor must be positive, got 0}}
  %0 = tbc.rope neox %x, %p head_dim = 16 rotary_dim = 16 theta = 10000.0 scaling = <kind = linear, factor = 0.0> : tensor<?x?x64xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_llama3_factors(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor, got 4.000000e+00 and 1.000000e+00}}
  %0 = tbc.rope neox %x, %p head_dim = 16 rotary_dim = 16 theta = 10000.0 scaling = <kind = llama3, factor = 8.0, low_freq_factor = 4.0, high_freq_factor = 1.0> : tensor<?x?x64xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_longrope_needs_lengths(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{'longrope' scaling depends on the sequence's length: it needs the 'lengths' operand}}
  %0 = tbc.rope neox %x, %p head_dim = 16 rotary_dim = 4 theta = 10000.0 scaling = <kind = longrope, factor = 4.0, original_max_position = 16, short_factor = [1.0, 2.0], long_factor = [1.0, 4.0]> : tensor<?x?x64xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_lengths_unused(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{'lengths' is only read by longrope and dynamic scaling}}
  %0 = tbc.rope neox %x, %p lengths(%p) head_dim = 16 rotary_dim = 16 theta = 10000.0 : tensor<?x?x64xf32>, tensor<?x?xi32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_longrope_factor_count(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{longrope factors must have rotary_dim / 2 = 8 entries, got 2}}
  %0 = tbc.rope neox %x, %p lengths(%p) head_dim = 16 rotary_dim = 16 theta = 10000.0 scaling = <kind = longrope, factor = 4.0, original_max_position = 16, short_factor = [1.0, 2.0], long_factor = [1.0, 4.0]> : tensor<?x?x64xf32>, tensor<?x?xi32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_longrope_factor_sizes(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{short_factor has 2 entries but long_factor 3}}
  %0 = tbc.rope neox %x, %p lengths(%p) head_dim = 16 rotary_dim = 4 theta = 10000.0 scaling = <kind = longrope, factor = 4.0, original_max_position = 16, short_factor = [1.0, 2.0], long_factor = [1.0, 4.0, 8.0]> : tensor<?x?x64xf32>, tensor<?x?xi32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_longrope_negative(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{long_factor[1] must be positive and finite, got -4.000000e+00}}
  %0 = tbc.rope neox %x, %p lengths(%p) head_dim = 16 rotary_dim = 4 theta = 10000.0 scaling = <kind = longrope, factor = 4.0, original_max_position = 16, short_factor = [1.0, 2.0], long_factor = [1.0, -4.0]> : tensor<?x?x64xf32>, tensor<?x?xi32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_longrope_missing_factors(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{longrope scaling needs short_factor and long_factor}}
  %0 = tbc.rope neox %x, %p lengths(%p) head_dim = 16 rotary_dim = 4 theta = 10000.0 scaling = <kind = longrope, factor = 4.0, original_max_position = 16> : tensor<?x?x64xf32>, tensor<?x?xi32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_factors_on_yarn(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{short_factor and long_factor belong to longrope scaling, not yarn}}
  %0 = tbc.rope neox %x, %p head_dim = 16 rotary_dim = 4 theta = 10000.0 scaling = <kind = yarn, factor = 4.0, short_factor = [1.0, 2.0], long_factor = [1.0, 4.0]> : tensor<?x?x64xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_yarn_betas(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{yarn rope scaling needs 0 < beta_slow < beta_fast, got 3.200000e+01 and 1.000000e+00}}
  %0 = tbc.rope neox %x, %p head_dim = 16 rotary_dim = 16 theta = 10000.0 scaling = <kind = yarn, factor = 4.0, beta_fast = 1.0, beta_slow = 32.0> : tensor<?x?x64xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_attention_factor_linear(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{attention_factor is only used by yarn and longrope scaling, not linear}}
  %0 = tbc.rope neox %x, %p head_dim = 16 rotary_dim = 16 theta = 10000.0 scaling = <kind = linear, factor = 4.0, attention_factor = 1.5> : tensor<?x?x64xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @rope_llama3_max_position(%x: tensor<?x?x64xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{llama3 rope scaling needs a positive original_max_position, got 0}}
  %0 = tbc.rope neox %x, %p head_dim = 16 rotary_dim = 16 theta = 10000.0 scaling = <kind = llama3, factor = 8.0, original_max_position = 0> : tensor<?x?x64xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @attention_gqa_divisible(%q: tensor<?x?x48xf32>, %kv: tensor<?x?x32xf32>) {
  // expected-error @+1 {{heads (3) must be a multiple of kv_heads (2)}}
  %0 = tbc.attention %q, %kv, %kv heads = 3 kv_heads = 2 head_dim = 16 scale = 0.25 : tensor<?x?x48xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  return
}

// -----

func.func @attention_window_twice(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>, %w: i64) {
  // expected-error @+1 {{takes a window attribute or a window(%value), not both}}
  %0 = tbc.attention %q, %kv, %kv window(%w) heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 causal window = 8 : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  return
}

// -----

func.func @attention_query_width(%q: tensor<?x?x48xf32>, %kv: tensor<?x?x32xf32>) {
  // expected-error @+1 {{query width 48 must be 4 heads x 16 = 64}}
  %0 = tbc.attention %q, %kv, %kv heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 : tensor<?x?x48xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  return
}

// -----

func.func @attention_key_width(%q: tensor<?x?x64xf32>, %k: tensor<?x?x16xf32>, %v: tensor<?x?x32xf32>) {
  // expected-error @+1 {{key width 16 must be 2 heads x 16 = 32}}
  %0 = tbc.attention %q, %k, %v heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 : tensor<?x?x64xf32>, tensor<?x?x16xf32>, tensor<?x?x32xf32>
  return
}

// -----

func.func @attention_value_width(%q: tensor<?x?x64xf32>, %k: tensor<?x?x32xf32>, %v: tensor<?x?x16xf32>) {
  // expected-error @+1 {{value width 16 must be 2 heads x 16 = 32}}
  %0 = tbc.attention %q, %k, %v heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x16xf32>
  return
}

// -----

func.func @attention_seq_mismatch(%q: tensor<1x5x64xf32>, %kv: tensor<1x4x32xf32>) {
  // expected-error @+1 {{query and key disagree in dimension 1 (5 vs 4)}}
  %0 = tbc.attention %q, %kv, %kv heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 : tensor<1x5x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>
  return
}

// -----

func.func @attention_kv_dtype(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf16>) {
  // expected-error @+1 {{query, key and value must share an element type}}
  %0 = tbc.attention %q, %kv, %kv heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 : tensor<?x?x64xf32>, tensor<?x?x32xf16>, tensor<?x?x32xf16>
  return
}

// -----

func.func @attention_window_bidirectional(%q: tensor<?x?x64xf32>, %w: i64) {
  // expected-error @+1 {{a sliding window needs `causal`}}
  %0 = tbc.attention %q, %q, %q heads = 4 kv_heads = 4 head_dim = 16 scale = 0.25 window = 8 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  return
}

// -----

func.func @attention_window_value_bidirectional(%q: tensor<?x?x64xf32>, %w: i64) {
  // expected-error @+1 {{a sliding window needs `causal`}}
  %0 = tbc.attention %q, %q, %q window(%w) heads = 4 kv_heads = 4 head_dim = 16 scale = 0.25 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  return
}

// -----

func.func @attention_window(%q: tensor<?x?x64xf32>) {
  // expected-error @+1 {{'window' must be positive, got 0}}
  %0 = tbc.attention %q, %q, %q heads = 4 kv_heads = 4 head_dim = 16 scale = 0.25 causal window = 0 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  return
}

// -----

func.func @attention_softcap(%q: tensor<?x?x64xf32>) {
  // expected-error @+1 {{'softcap' must be positive, got -5}}
  %0 = tbc.attention %q, %q, %q heads = 4 kv_heads = 4 head_dim = 16 scale = 0.25 softcap = -5.0 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  return
}

// -----

func.func @attention_scale(%q: tensor<?x?x64xf32>) {
  // expected-error @+1 {{'scale' must be positive, got 0}}
  %0 = tbc.attention %q, %q, %q heads = 4 kv_heads = 4 head_dim = 16 scale = 0.0 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  return
}

// -----

func.func @attention_heads(%q: tensor<?x?x64xf32>) {
  // expected-error @+1 {{'kv_heads' must be positive, got 0}}
  %0 = tbc.attention %q, %q, %q heads = 4 kv_heads = 0 head_dim = 16 scale = 0.25 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  return
}

// -----

func.func @glu_shape(%a: tensor<?x32xf32>, %b: tensor<?x16xf32>) {
  // expected-note @-1 {{prior use here}}
  // expected-error @+1 {{use of value '%b' expects different type than prior uses}}
  %0 = tbc.glu silu %a, %b : tensor<?x32xf32>
  return
}

// -----

func.func @glu_unknown_act(%a: tensor<?x32xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'act' [silu, gelu, gelu_tanh, relu, sigmoid, relu2]}}
  %0 = tbc.glu swish %a, %a : tensor<?x32xf32>
  return
}

// -----

func.func @softcap_negative(%x: tensor<?x32xf32>) {
  // expected-error @+1 {{'cap' must be positive, got -3.000000e+01}}
  %0 = tbc.softcap %x cap = -30.0 : tensor<?x32xf32>
  return
}

// -----

func.func @scale_zero(%x: tensor<?x32xf32>) {
  // expected-error @+1 {{'factor' must be positive, got 0.000000e+00}}
  %0 = tbc.scale %x by 0.0 : tensor<?x32xf32>
  return
}

// -----

func.func @scale_infinite(%x: tensor<?x32xf32>) {
  // expected-error @+1 {{'factor' must be finite, got inf}}
  %0 = tbc.scale %x by 0x7FF0000000000000 : tensor<?x32xf32>
  return
}

// -----

func.func @add_mismatch(%a: tensor<?x32xf32>, %b: tensor<?x32xf16>) {
  // expected-error @+1 {{all of {lhs, rhs, result} have same type}}
  %0 = "tbc.add"(%a, %b) : (tensor<?x32xf32>, tensor<?x32xf16>) -> tensor<?x32xf32>
  return
}

// -----

func.func @sinusoidal_odd(%pos: tensor<?x?xi32>) {
  // expected-error @+1 {{width must be static and even, got 15}}
  %0 = tbc.sinusoidal_positions %pos base = 10000.0 : tensor<?x?xi32> -> tensor<?x?x15xf32>
  return
}

// -----

func.func @sinusoidal_rank(%pos: tensor<?x?xi32>) {
  // expected-error @+1 {{result must have rank 3 (the positions' shape plus a width)}}
  %0 = tbc.sinusoidal_positions %pos base = 10000.0 : tensor<?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @sinusoidal_shape(%pos: tensor<2x?xi32>) {
  // expected-error @+1 {{result disagrees with the positions in dimension 0}}
  %0 = tbc.sinusoidal_positions %pos base = 10000.0 : tensor<2x?xi32> -> tensor<3x?x16xf32>
  return
}

// -----

func.func @sinusoidal_base(%pos: tensor<?x?xi32>) {
  // expected-error @+1 {{'base' must be positive, got 0}}
  %0 = tbc.sinusoidal_positions %pos base = 0.0 : tensor<?x?xi32> -> tensor<?x?x16xf32>
  return
}

// -----

// Issue 9: 4 x (2^62 + 16) wraps to 64 and used to pass.
func.func @attention_head_dim_past_limit(%q: tensor<?x?x64xf32>) {
  // expected-error @+1 {{'head_dim' is 4611686018427387920, past tbc's limit of 4294967296}}
  %0 = tbc.attention %q, %q, %q heads = 4 kv_heads = 4 head_dim = 4611686018427387920 scale = 0.25 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  return
}

// -----

func.func @attention_width_overflows(%q: tensor<?x?x64xf32>) {
  // expected-error @+1 {{heads x head_dim 1048576 x 1048576 overflows tbc's limit of 4294967296}}
  %0 = tbc.attention %q, %q, %q heads = 1048576 kv_heads = 1048576 head_dim = 1048576 scale = 0.25 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  return
}

// -----

func.func @attention_softcap_infinite(%q: tensor<?x?x64xf32>) {
  // expected-error @+1 {{'softcap' must be finite, got infinity}}
  %0 = tbc.attention %q, %q, %q heads = 4 kv_heads = 4 head_dim = 16 scale = 0.25 softcap = 0x7FF0000000000000 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  return
}

// -----

func.func @rms_norm_nan_eps(%x: tensor<?x?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{'eps' must be finite, got NaN}}
  %0 = tbc.rms_norm %x, %w eps = 0x7FF8000000000000 : tensor<?x?x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @zero_width(%x: tensor<?x?x0xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{operand #0 has dimension 2 of size 0 (tbc tensors have 1 to 4294967296 elements per dimension)}}
  %0 = tbc.rms_norm %x, %w eps = 1.0e-5 : tensor<?x?x0xf32>, tensor<64xf32>
  return
}

// -----

func.func @too_many_elements(%w: tensor<2097152x2097152xf32>) {
  // expected-error @+1 {{result #0 ('tensor<2097152x2097152xf32>') has more than 1099511627776 elements}}
  %0 = tbc.param "w" : tensor<2097152x2097152xf32>
  return
}

// -----

func.func @alibi_slope_count(%q: tensor<?x?x64xf32>) {
  // expected-error @+1 {{alibi_slopes has 3 slopes; expected one per head (4)}}
  %0 = tbc.attention %q, %q, %q heads = 4 kv_heads = 4 head_dim = 16 scale = 0.25 causal alibi_slopes = [0.5, 0.25, 0.125] : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  return
}

// -----

func.func @alibi_negative_slope(%q: tensor<?x?x64xf32>) {
  // expected-error @+1 {{alibi slope of head 2 must be positive and finite, got -1.250000e-01}}
  %0 = tbc.attention %q, %q, %q heads = 4 kv_heads = 4 head_dim = 16 scale = 0.25 causal alibi_slopes = [0.5, 0.25, -0.125, 0.0625] : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  return
}

// -----

func.func @relative_bias_shape(%q: tensor<?x?x64xf32>, %t: tensor<32x8xf32>) {
  // expected-error @+1 {{relative_bias must be [num_buckets, heads] = [32, 4], got 'tensor<32x8xf32>'}}
  %0 = tbc.attention %q, %q, %q relative_bias %t heads = 4 kv_heads = 4 head_dim = 16 scale = 1.0 buckets = <num_buckets = 32, max_distance = 128> : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<32x8xf32>
  return
}

// -----

func.func @relative_bias_without_buckets(%q: tensor<?x?x64xf32>, %t: tensor<32x4xf32>) {
  // expected-error @+1 {{relative_bias and buckets go together}}
  %0 = tbc.attention %q, %q, %q relative_bias %t heads = 4 kv_heads = 4 head_dim = 16 scale = 1.0 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<32x4xf32>
  return
}

// -----

func.func @alibi_and_relative(%q: tensor<?x?x64xf32>, %t: tensor<32x4xf32>) {
  // expected-error @+1 {{takes alibi_slopes or a relative_bias, not both}}
  %0 = tbc.attention %q, %q, %q relative_bias %t heads = 4 kv_heads = 4 head_dim = 16 scale = 1.0 alibi_slopes = [0.5, 0.25, 0.125, 0.0625] buckets = <num_buckets = 32, max_distance = 128> : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<32x4xf32>
  return
}

// -----

func.func @zero_buckets(%q: tensor<?x?x64xf32>, %t: tensor<0x4xf32>) {
  // expected-error @+1 {{num_buckets must be at least 2, got 0}}
  %0 = tbc.attention %q, %q, %q relative_bias %t heads = 4 kv_heads = 4 head_dim = 16 scale = 1.0 buckets = <num_buckets = 0, max_distance = 128> : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<0x4xf32>
  return
}

// -----

func.func @max_distance_inside_exact_range(%q: tensor<?x?x64xf32>, %t: tensor<32x4xf32>) {
  // expected-error @+1 {{max_distance must exceed the exact range (8 buckets), got 8}}
  %0 = tbc.attention %q, %q, %q relative_bias %t heads = 4 kv_heads = 4 head_dim = 16 scale = 1.0 buckets = <num_buckets = 32, max_distance = 8, bidirectional = true> : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<32x4xf32>
  return
}

// -----

func.func @clip_limit(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{limit}}
  %0 = tbc.clip %x limit = 0.0 : tensor<?x?x64xf32>
  return
}

// -----

func.func @fused_linear_gain_without_norm(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{'gain' scales a norm prologue's input: it needs 'norm'}}
  %0 = tbc.fused_linear %x, %w gain(%g) : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32xf32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @fused_linear_gain_length(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{gain must be a vector of 32 elements, got 'tensor<16xf32>'}}
  %0 = tbc.fused_linear %x, %w gain(%g) norm = rms eps = 1.0e-5 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<16xf32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @fused_linear_gain_offset_alone(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>) {
  // expected-error @+1 {{'gain_offset' needs a 'gain'}}
  %0 = tbc.fused_linear %x, %w norm = rms eps = 1.0e-5 gain_offset = 1.0 : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @fused_linear_rope_positions(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>) {
  // expected-error @+1 {{a 'rope' epilogue needs the 'positions' operand}}
  %0 = tbc.fused_linear %x, %w rope = <style = neox, columns = 32, head_dim = 16, rotary_dim = 16, theta = 10000.0> : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @fused_linear_positions_alone(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{'positions' and 'lengths' are read only by a 'rope' epilogue}}
  %0 = tbc.fused_linear %x, %w positions(%p) : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @fused_linear_rope_columns(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{rope rotates 80 columns but the result has 64}}
  %0 = tbc.fused_linear %x, %w positions(%p) rope = <style = neox, columns = 80, head_dim = 16, rotary_dim = 16, theta = 10000.0> : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @fused_linear_rope_whole_heads(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{rotary 'columns' must be a positive multiple of 'head_dim' 16 (whole heads), got 24}}
  %0 = tbc.fused_linear %x, %w positions(%p) rope = <style = neox, columns = 24, head_dim = 16, rotary_dim = 16, theta = 10000.0> : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @fused_linear_rope_rotary_dim(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{'rotary_dim' 32 exceeds 'head_dim' 16}}
  %0 = tbc.fused_linear %x, %w positions(%p) rope = <style = neox, columns = 32, head_dim = 16, rotary_dim = 32, theta = 10000.0> : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @fused_linear_rope_and_act(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{a 'rope' epilogue excludes 'act', 'glu', 'scale', 'softcap' and 'residual'}}
  %0 = tbc.fused_linear %x, %w positions(%p) act = silu rope = <style = neox, columns = 32, head_dim = 16, rotary_dim = 16, theta = 10000.0> : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @fused_linear_rope_and_scale(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{a 'rope' epilogue excludes 'act', 'glu', 'scale', 'softcap' and 'residual'}}
  %0 = tbc.fused_linear %x, %w positions(%p) scale = 2.0 rope = <style = neox, columns = 32, head_dim = 16, rotary_dim = 16, theta = 10000.0> : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @fused_linear_rope_and_residual(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %p: tensor<?x?xi32>, %h: tensor<?x?x64xf32>) {
  // expected-error @+1 {{a 'rope' epilogue excludes 'act', 'glu', 'scale', 'softcap' and 'residual'}}
  %0 = tbc.fused_linear %x, %w positions(%p) residual(%h) rope = <style = neox, columns = 32, head_dim = 16, rotary_dim = 16, theta = 10000.0> : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?xi32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @fused_linear_rope_lengths(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %p: tensor<?x?xi32>) {
  // expected-error @+1 {{'dynamic' scaling depends on the sequence's length: it needs the 'lengths' operand}}
  %0 = tbc.fused_linear %x, %w positions(%p) rope = <style = neox, columns = 32, head_dim = 16, rotary_dim = 16, theta = 10000.0, scaling = <kind = dynamic, factor = 2.0, original_max_position = 16>> : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<?x?x64xf32>
  return
}
