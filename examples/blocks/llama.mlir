// A Llama-3-8B decoder layer (layer 0): pre-RMSNorm, GQA (32 query heads
// sharing 8 key/value heads), NeoX-style RoPE with llama3 frequency scaling,
// SwiGLU feed-forward. Activations are [batch, seq, hidden].
//
//   h   = x + o(attn(rope(q(n1 x)), rope(k(n1 x)), v(n1 x)))
//   out = h + down(silu(gate(n2 h)) * up(n2 h))

func.func @llama_layer0(%x: tensor<?x?x4096xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x4096xf32> {
  %n1_w = tbc.param "model.layers.0.input_layernorm.weight" : tensor<4096xf32>
  %wq = tbc.param "model.layers.0.self_attn.q_proj.weight" : tensor<4096x4096xf32>
  %wk = tbc.param "model.layers.0.self_attn.k_proj.weight" : tensor<1024x4096xf32>
  %wv = tbc.param "model.layers.0.self_attn.v_proj.weight" : tensor<1024x4096xf32>
  %wo = tbc.param "model.layers.0.self_attn.o_proj.weight" : tensor<4096x4096xf32>
  %n2_w = tbc.param "model.layers.0.post_attention_layernorm.weight" : tensor<4096xf32>
  %wg = tbc.param "model.layers.0.mlp.gate_proj.weight" : tensor<14336x4096xf32>
  %wu = tbc.param "model.layers.0.mlp.up_proj.weight" : tensor<14336x4096xf32>
  %wd = tbc.param "model.layers.0.mlp.down_proj.weight" : tensor<4096x14336xf32>

  // Attention sub-layer.
  %n1 = tbc.rms_norm %x, %n1_w eps = 1.0e-5 : tensor<?x?x4096xf32>, tensor<4096xf32>
  %q = tbc.linear %n1, %wq : tensor<?x?x4096xf32>, tensor<4096x4096xf32> -> tensor<?x?x4096xf32>
  %k = tbc.linear %n1, %wk : tensor<?x?x4096xf32>, tensor<1024x4096xf32> -> tensor<?x?x1024xf32>
  %v = tbc.linear %n1, %wv : tensor<?x?x4096xf32>, tensor<1024x4096xf32> -> tensor<?x?x1024xf32>
  %qr = tbc.rope neox %q, %pos head_dim = 128 rotary_dim = 128 theta = 500000.0
          scaling = <kind = llama3, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position = 8192>
          : tensor<?x?x4096xf32>, tensor<?x?xi32>
  %kr = tbc.rope neox %k, %pos head_dim = 128 rotary_dim = 128 theta = 500000.0
          scaling = <kind = llama3, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position = 8192>
          : tensor<?x?x1024xf32>, tensor<?x?xi32>
  %a = tbc.attention %qr, %kr, %v heads = 32 kv_heads = 8 head_dim = 128 scale = 0.08838834764831845 causal
         : tensor<?x?x4096xf32>, tensor<?x?x1024xf32>, tensor<?x?x1024xf32>
  %o = tbc.linear %a, %wo : tensor<?x?x4096xf32>, tensor<4096x4096xf32> -> tensor<?x?x4096xf32>
  %h = tbc.add %x, %o : tensor<?x?x4096xf32>

  // SwiGLU feed-forward sub-layer.
  %n2 = tbc.rms_norm %h, %n2_w eps = 1.0e-5 : tensor<?x?x4096xf32>, tensor<4096xf32>
  %g = tbc.linear %n2, %wg : tensor<?x?x4096xf32>, tensor<14336x4096xf32> -> tensor<?x?x14336xf32>
  %u = tbc.linear %n2, %wu : tensor<?x?x4096xf32>, tensor<14336x4096xf32> -> tensor<?x?x14336xf32>
  %gu = tbc.glu silu %g, %u : tensor<?x?x14336xf32>
  %d = tbc.linear %gu, %wd : tensor<?x?x14336xf32>, tensor<4096x14336xf32> -> tensor<?x?x4096xf32>
  %out = tbc.add %h, %d : tensor<?x?x4096xf32>
  return %out : tensor<?x?x4096xf32>
}
