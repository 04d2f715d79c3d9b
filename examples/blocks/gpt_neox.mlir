// A Pythia-1.4B (GPT-NeoX) layer: LayerNorms with bias, parallel attention
// and MLP off the same residual, per-head interleaved fused QKV, partial
// rotary (rotary_pct 0.25 of head_dim 128 = 32 dims), exact-GELU MLP, biases
// everywhere.
//
//   out = x + dense(attn(ln1 x)) + dense_4h_to_h(gelu(dense_h_to_4h(ln2 x)))

func.func @gpt_neox_layer0(%x: tensor<?x?x2048xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x2048xf32> {
  %ln1_w = tbc.param "gpt_neox.layers.0.input_layernorm.weight" : tensor<2048xf32>
  %ln1_b = tbc.param "gpt_neox.layers.0.input_layernorm.bias" : tensor<2048xf32>
  %wqkv = tbc.param "gpt_neox.layers.0.attention.query_key_value.weight" : tensor<6144x2048xf32>
  %bqkv = tbc.param "gpt_neox.layers.0.attention.query_key_value.bias" : tensor<6144xf32>
  %wo = tbc.param "gpt_neox.layers.0.attention.dense.weight" : tensor<2048x2048xf32>
  %bo = tbc.param "gpt_neox.layers.0.attention.dense.bias" : tensor<2048xf32>
  %ln2_w = tbc.param "gpt_neox.layers.0.post_attention_layernorm.weight" : tensor<2048xf32>
  %ln2_b = tbc.param "gpt_neox.layers.0.post_attention_layernorm.bias" : tensor<2048xf32>
  %w1 = tbc.param "gpt_neox.layers.0.mlp.dense_h_to_4h.weight" : tensor<8192x2048xf32>
  %b1 = tbc.param "gpt_neox.layers.0.mlp.dense_h_to_4h.bias" : tensor<8192xf32>
  %w2 = tbc.param "gpt_neox.layers.0.mlp.dense_4h_to_h.weight" : tensor<2048x8192xf32>
  %b2 = tbc.param "gpt_neox.layers.0.mlp.dense_4h_to_h.bias" : tensor<2048xf32>

  // Attention branch: the fused projection's output is [heads, 3 * head_dim].
  %n1 = tbc.layer_norm %x, %ln1_w, %ln1_b eps = 1.0e-5 : tensor<?x?x2048xf32>, tensor<2048xf32>, tensor<2048xf32>
  %qkv = tbc.linear %n1, %wqkv, %bqkv : tensor<?x?x2048xf32>, tensor<6144x2048xf32>, tensor<6144xf32> -> tensor<?x?x6144xf32>
  %q, %k, %v = tbc.split %qkv groups = 16
         : tensor<?x?x6144xf32> -> tensor<?x?x2048xf32>, tensor<?x?x2048xf32>, tensor<?x?x2048xf32>
  %qr = tbc.rope neox %q, %pos head_dim = 128 rotary_dim = 32 theta = 10000.0 : tensor<?x?x2048xf32>, tensor<?x?xi32>
  %kr = tbc.rope neox %k, %pos head_dim = 128 rotary_dim = 32 theta = 10000.0 : tensor<?x?x2048xf32>, tensor<?x?xi32>
  %a = tbc.attention %qr, %kr, %v heads = 16 kv_heads = 16 head_dim = 128 scale = 0.08838834764831845 causal
         : tensor<?x?x2048xf32>, tensor<?x?x2048xf32>, tensor<?x?x2048xf32>
  %o = tbc.linear %a, %wo, %bo : tensor<?x?x2048xf32>, tensor<2048x2048xf32>, tensor<2048xf32> -> tensor<?x?x2048xf32>

  // MLP branch, off the same residual input.
  %n2 = tbc.layer_norm %x, %ln2_w, %ln2_b eps = 1.0e-5 : tensor<?x?x2048xf32>, tensor<2048xf32>, tensor<2048xf32>
  %up = tbc.linear %n2, %w1, %b1 : tensor<?x?x2048xf32>, tensor<8192x2048xf32>, tensor<8192xf32> -> tensor<?x?x8192xf32>
  %act = tbc.activation gelu %up : tensor<?x?x8192xf32>
  %m = tbc.linear %act, %w2, %b2 : tensor<?x?x8192xf32>, tensor<2048x8192xf32>, tensor<2048xf32> -> tensor<?x?x2048xf32>

  %xo = tbc.add %x, %o : tensor<?x?x2048xf32>
  %out = tbc.add %xo, %m : tensor<?x?x2048xf32>
  return %out : tensor<?x?x2048xf32>
}
