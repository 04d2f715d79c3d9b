// A Gemma-2-9B decoder layer (layer 0, a sliding-window layer) and its LM
// head. Sandwich RMSNorms with Gemma's (1 + w) gain, attention scale
// query_pre_attn_scalar^-0.5 = 256^-0.5, attention-logit soft-cap 50,
// 4096-token sliding window, GeGLU with the tanh GELU, final-logit soft-cap 30.
//
//   h   = x + post_attn(attn(input(x)))
//   out = h + post_ff(down(gelu_tanh(gate(pre_ff h)) * up(pre_ff h)))

func.func @gemma2_layer0(%x: tensor<?x?x3584xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x3584xf32> {
  %in_w = tbc.param "model.layers.0.input_layernorm.weight" : tensor<3584xf32>
  %wq = tbc.param "model.layers.0.self_attn.q_proj.weight" : tensor<4096x3584xf32>
  %wk = tbc.param "model.layers.0.self_attn.k_proj.weight" : tensor<2048x3584xf32>
  %wv = tbc.param "model.layers.0.self_attn.v_proj.weight" : tensor<2048x3584xf32>
  %wo = tbc.param "model.layers.0.self_attn.o_proj.weight" : tensor<3584x4096xf32>
  %pa_w = tbc.param "model.layers.0.post_attention_layernorm.weight" : tensor<3584xf32>
  %pf_w = tbc.param "model.layers.0.pre_feedforward_layernorm.weight" : tensor<3584xf32>
  %wg = tbc.param "model.layers.0.mlp.gate_proj.weight" : tensor<14336x3584xf32>
  %wu = tbc.param "model.layers.0.mlp.up_proj.weight" : tensor<14336x3584xf32>
  %wd = tbc.param "model.layers.0.mlp.down_proj.weight" : tensor<3584x14336xf32>
  %po_w = tbc.param "model.layers.0.post_feedforward_layernorm.weight" : tensor<3584xf32>

  %n1 = tbc.rms_norm %x, %in_w eps = 1.0e-6 gain_offset = 1.0 : tensor<?x?x3584xf32>, tensor<3584xf32>
  %q = tbc.linear %n1, %wq : tensor<?x?x3584xf32>, tensor<4096x3584xf32> -> tensor<?x?x4096xf32>
  %k = tbc.linear %n1, %wk : tensor<?x?x3584xf32>, tensor<2048x3584xf32> -> tensor<?x?x2048xf32>
  %v = tbc.linear %n1, %wv : tensor<?x?x3584xf32>, tensor<2048x3584xf32> -> tensor<?x?x2048xf32>
  %qr = tbc.rope neox %q, %pos head_dim = 256 rotary_dim = 256 theta = 10000.0 : tensor<?x?x4096xf32>, tensor<?x?xi32>
  %kr = tbc.rope neox %k, %pos head_dim = 256 rotary_dim = 256 theta = 10000.0 : tensor<?x?x2048xf32>, tensor<?x?xi32>
  %a = tbc.attention %qr, %kr, %v heads = 16 kv_heads = 8 head_dim = 256 scale = 0.0625 causal window = 4096 softcap = 50.0
         : tensor<?x?x4096xf32>, tensor<?x?x2048xf32>, tensor<?x?x2048xf32>
  %o = tbc.linear %a, %wo : tensor<?x?x4096xf32>, tensor<3584x4096xf32> -> tensor<?x?x3584xf32>
  %on = tbc.rms_norm %o, %pa_w eps = 1.0e-6 gain_offset = 1.0 : tensor<?x?x3584xf32>, tensor<3584xf32>
  %h = tbc.add %x, %on : tensor<?x?x3584xf32>

  %n2 = tbc.rms_norm %h, %pf_w eps = 1.0e-6 gain_offset = 1.0 : tensor<?x?x3584xf32>, tensor<3584xf32>
  %g = tbc.linear %n2, %wg : tensor<?x?x3584xf32>, tensor<14336x3584xf32> -> tensor<?x?x14336xf32>
  %u = tbc.linear %n2, %wu : tensor<?x?x3584xf32>, tensor<14336x3584xf32> -> tensor<?x?x14336xf32>
  %gu = tbc.glu gelu_tanh %g, %u : tensor<?x?x14336xf32>
  %d = tbc.linear %gu, %wd : tensor<?x?x14336xf32>, tensor<3584x14336xf32> -> tensor<?x?x3584xf32>
  %dn = tbc.rms_norm %d, %po_w eps = 1.0e-6 gain_offset = 1.0 : tensor<?x?x3584xf32>, tensor<3584xf32>
  %out = tbc.add %h, %dn : tensor<?x?x3584xf32>
  return %out : tensor<?x?x3584xf32>
}

// Final norm, tied LM head (the embedding table) and final-logit soft-cap.
func.func @gemma2_head(%x: tensor<?x?x3584xf32>) -> tensor<?x?x256000xf32> {
  %nw = tbc.param "model.norm.weight" : tensor<3584xf32>
  %emb = tbc.param "model.embed_tokens.weight" : tensor<256000x3584xf32>
  %n = tbc.rms_norm %x, %nw eps = 1.0e-6 gain_offset = 1.0 : tensor<?x?x3584xf32>, tensor<3584xf32>
  %logits = tbc.linear %n, %emb : tensor<?x?x3584xf32>, tensor<256000x3584xf32> -> tensor<?x?x256000xf32>
  %capped = tbc.softcap %logits cap = 30.0 : tensor<?x?x256000xf32>
  return %capped : tensor<?x?x256000xf32>
}
