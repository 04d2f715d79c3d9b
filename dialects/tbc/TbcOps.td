//===- TbcOps.td - tbc core operations ---------------------*- tablegen -*-===//
//
// The core ops (docs/dialect.md describes the dialect). Every op has a
// readable custom assembly format and a verifier that names the offending
// operand or attribute; result types are inferred where the shape follows
// from the operands.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_OPS_TD
#define TBC_OPS_TD

include "TbcDialect.td"
include "TbcAttrs.td"
include "TbcInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Parameters and embeddings
//===----------------------------------------------------------------------===//

def Tbc_ParamOp : Tbc_Op<"param", [Pure]> {
  let summary = "a named model weight, bound by the runtime at load time";
  let description = [{
    References one tensor of the user's checkpoint by its exact name (as in the
    safetensors file). The shape must be static: the runtime checks the bound
    tensor against it before anything runs. Weights are never constants in
    the IR, so one compiled module serves every checkpoint of an architecture.

    ```mlir
    %w = tbc.param "model.layers.0.self_attn.q_proj.weight" : tensor<4096x4096xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tbc_EmbeddingOp : Tbc_Op<"embedding",
    [Pure, DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "row gather from an embedding table, optionally scaled";
  let description = [{
    `result[..., :] = table[ids[...], :] * scale`. `table` is `[vocab, hidden]`;
    the result has the shape of `ids` with `hidden` appended. `scale` (default
    1) models Gemma's `sqrt(hidden)` normaliser, applied after the gather and
    rounded to the table's element type.

    ```mlir
    %h = tbc.embedding %table[%ids] scale = 48.0 : tensor<256000x2304xf32>, tensor<?x?xi32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$table, Tbc_IndexTensor:$ids,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` (`scale` `=` $scale^)? attr-dict `:` type($table) `,` type($ids)
  }];
  let hasVerifier = 1;
}

def Tbc_SinusoidalPositionsOp : Tbc_Op<"sinusoidal_positions", [Pure]> {
  let summary = "fixed sinusoidal position encodings (Vaswani et al.)";
  let description = [{
    `result[..., 2i] = sin(p / base^(2i/d))`, `result[..., 2i+1] = cos(p /
    base^(2i/d))` for each position `p` of `positions`, where `d` is the
    (even) width of the result. Added to the token embeddings by models
    without learned or rotary positions.

    ```mlir
    %pe = tbc.sinusoidal_positions %pos base = 10000.0 : tensor<?x?xi32> -> tensor<?x?x256xf32>
    ```
  }];
  let arguments = (ins Tbc_IndexTensor:$positions, F64Attr:$base);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = [{
    $positions `base` `=` $base attr-dict `:` type($positions) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

def Tbc_RMSNormOp : Tbc_Op<"rms_norm",
    [Pure, AllTypesMatch<["input", "result"]>, Tbc_NormOpInterface]> {
  let summary = "RMSNorm over the last dimension (or groups of it)";
  let description = [{
    `y = x * rsqrt(mean(x^2) + eps) * (gain_offset + weight)`, statistics in
    float32. `gain_offset = 1` models Gemma's `(1 + w)` gain. With `groups = G`
    the last dimension is split into G contiguous groups of `weight` length,
    each normalised on its own: this is per-head QK-norm (Qwen3, Gemma 3),
    with G = number of heads. The groups share one gain of the group's
    length, or each has its own: a weight of the whole last dimension
    (`[G * len]`, group g's gain at `g * len`) or `[G, len]` (row g).
    Without `groups` the weight length must equal the last dimension.

    ```mlir
    %y = tbc.rms_norm %x, %w eps = 1.0e-05 : tensor<?x?x4096xf32>, tensor<4096xf32>
    %q = tbc.rms_norm %x, %w eps = 1.0e-06 gain_offset = 1.0 groups = 8 : tensor<?x?x2048xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$input, Tbc_FloatTensor:$weight, F64Attr:$eps,
                       OptionalAttr<F64Attr>:$gain_offset,
                       OptionalAttr<I64Attr>:$groups);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `eps` `=` $eps (`gain_offset` `=` $gain_offset^)? (`groups` `=` $groups^)?
    attr-dict `:` type($input) `,` type($weight)
  }];
  let extraClassDeclaration = [{
    double getGainOffsetValue() {
      auto v = getGainOffset();
      return v ? v->convertToDouble() : 0.0;
    }
    int64_t getNumGroups() { return getGroups().value_or(1); }
    NormKind getNormKind() { return NormKind::rms; }
    ::mlir::Value getNormBias() { return {}; }
  }];
  let hasVerifier = 1;
}

def Tbc_LayerNormOp : Tbc_Op<"layer_norm",
    [Pure, AllTypesMatch<["input", "result"]>, Tbc_NormOpInterface]> {
  let summary = "LayerNorm over the last dimension (or groups of it), optional bias";
  let description = [{
    `y = (x - mean(x)) * rsqrt(var(x) + eps) * (gain_offset + weight) + bias`,
    statistics in float32, biased variance (as torch.nn.LayerNorm);
    `gain_offset = 1` is Nemotron's LayerNorm1P. With `groups = G` the
    last dimension is split into G contiguous groups, each normalised on its
    own, as `tbc.rms_norm`'s: per-head QK LayerNorm, with one gain for every
    head (Phi's `q_layernorm`, `[len]`) or a gain per head (StableLM 2's
    `norms.{h}`, Cohere's `q_norm`: `[G * len]` or `[G, len]`). The bias has
    the weight's shape.

    ```mlir
    %y = tbc.layer_norm %x, %w, %b eps = 1.0e-05 : tensor<?x?x512xf32>, tensor<512xf32>, tensor<512xf32>
    %n = tbc.layer_norm %x, %w, %b eps = 1.0e-05 gain_offset = 1.0 : tensor<?x?x512xf32>, tensor<512xf32>, tensor<512xf32>
    %q = tbc.layer_norm %x, %w eps = 1.0e-05 groups = 32 : tensor<?x?x4096xf32>, tensor<32x128xf32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$input, Tbc_FloatTensor:$weight,
                       Optional<Tbc_FloatTensor>:$bias, F64Attr:$eps,
                       OptionalAttr<F64Attr>:$gain_offset,
                       OptionalAttr<I64Attr>:$groups);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? `eps` `=` $eps (`gain_offset` `=` $gain_offset^)?
    (`groups` `=` $groups^)? attr-dict `:` type($input) `,` type($weight) (`,` type($bias)^)?
  }];
  let extraClassDeclaration = [{
    NormKind getNormKind() { return NormKind::layer; }
    ::mlir::Value getNormBias() { return getBias(); }
    double getGainOffsetValue() {
      auto v = getGainOffset();
      return v ? v->convertToDouble() : 0.0;
    }
    int64_t getNumGroups() { return getGroups().value_or(1); }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Projections
//===----------------------------------------------------------------------===//

def Tbc_LinearOp : Tbc_Op<"linear",
    [Pure, DeclareOpInterfaceMethods<InferTypeOpInterface>, Tbc_ProjectionOpInterface]> {
  let summary = "y = x W^T + b over the last dimension";
  let description = [{
    `weight` is `[out, in]` as in torch.nn.Linear. With `weight_in_out` it is
    `[in, out]` (GPT-2's Conv1D) and `y = x W + b`; recording the layout lets
    the runtime bind the user's unmodified tensor. `bias`, if present, is
    `[out]`.

    ```mlir
    %q = tbc.linear %x, %wq : tensor<?x?x4096xf32>, tensor<4096x4096xf32> -> tensor<?x?x4096xf32>
    %a = tbc.linear %x, %w, %b weight_in_out : tensor<?x?x768xf32>, tensor<768x2304xf32>, tensor<2304xf32> -> tensor<?x?x2304xf32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$input, Tbc_FloatTensor:$weight,
                       Optional<Tbc_FloatTensor>:$bias, UnitAttr:$weight_in_out);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`weight_in_out` $weight_in_out^)? attr-dict `:`
    type($input) `,` type($weight) (`,` type($bias)^)? `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// Number of input / output features, whatever the weight layout.
    int64_t getInFeatures();
    int64_t getOutFeatures();
    bool hasNormPrologue() { return false; }
  }];
  let hasVerifier = 1;
}

def Tbc_SplitOp : Tbc_Op<"split", [Pure]> {
  let summary = "split the last dimension into chunks (fused QKV / gate-up outputs)";
  let description = [{
    Splits the last dimension into consecutive chunks of the result widths.
    With `groups = G` the last dimension is first viewed as `[G, sum/G]` and
    every result takes its share from each group: GPT-NeoX's per-head
    interleaved `query_key_value` output is `groups = heads`.

    ```mlir
    %q, %k, %v = tbc.split %qkv : tensor<?x?x3072xf32> -> tensor<?x?x1024xf32>, tensor<?x?x1024xf32>, tensor<?x?x1024xf32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$input, OptionalAttr<I64Attr>:$groups);
  let results = (outs Variadic<Tbc_FloatTensor>:$results);
  let assemblyFormat = [{
    $input (`groups` `=` $groups^)? attr-dict `:` type($input) `->` type($results)
  }];
  let extraClassDeclaration = [{
    int64_t getNumGroups() { return getGroups().value_or(1); }
    NormKind getNormKind() { return NormKind::rms; }
    ::mlir::Value getNormBias() { return {}; }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Positions and attention
//===----------------------------------------------------------------------===//

def Tbc_RopeOp : Tbc_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding on every head";
  let description = [{
    `input` is `[..., seq, heads * head_dim]`, `positions` `[..., seq]`. The
    first `rotary_dim` dims of each head are rotated (partial rotary when
    `rotary_dim < head_dim`), the rest pass through. Inverse frequencies are
    `theta^(-2i / rotary_dim)`, optionally rescaled by `scaling`. `neox` style
    rotates halves (rotate_half), `gptj` rotates interleaved pairs.

    Scalings whose frequencies depend on the sequence's length (`longrope`,
    `dynamic`) read `lengths` (like `positions`): the length each row's
    sequence has once this call's tokens are in, i.e. its largest position
    + 1, which transformers computes per call from `position_ids`.

    ```mlir
    %q = tbc.rope neox %x, %pos head_dim = 128 rotary_dim = 128 theta = 500000.0
           scaling = <kind = llama3, factor = 8.0, low_freq_factor = 1.0,
                                       high_freq_factor = 4.0, original_max_position = 8192>
           : tensor<?x?x4096xf32>, tensor<?x?xi32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$input, Tbc_IndexTensor:$positions,
                       Optional<Tbc_IndexTensor>:$lengths,
                       Tbc_RopeStyle:$style, I64Attr:$head_dim, I64Attr:$rotary_dim,
                       F64Attr:$theta, OptionalAttr<Tbc_RopeScalingAttr>:$scaling);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = [{
    $style $input `,` $positions (`lengths` `(` $lengths^ `)`)? `head_dim` `=` $head_dim
    `rotary_dim` `=` $rotary_dim `theta` `=` $theta (`scaling` `=` $scaling^)? attr-dict
    `:` type($input) `,` type($positions) (`,` type($lengths)^)?
  }];
  let hasVerifier = 1;
}

def Tbc_AttentionOp : Tbc_Op<"attention",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["query", "result"]>]> {
  let summary = "scaled dot-product attention: MHA, GQA or MQA";
  let description = [{
    `query` is `[..., seq, heads * head_dim]`, `key`/`value`
    `[..., seq, kv_heads * head_dim]`. Key/value head j serves query heads
    `j*g ... j*g+g-1` with `g = heads / kv_heads` (kv_heads = heads: MHA,
    kv_heads = 1: MQA). Logits are `scale * q.k`, then soft-capped
    (`softcap * tanh(s / softcap)`) if `softcap` is set, then masked: with
    `causal` a query at position p sees keys at positions <= p, with
    `window = W` only keys at positions > p - W. Softmax in float32.

    The window may instead be a value, `window(%w)` (an `i64`, the op's last
    operand; 0 or less: no window), so that layers differing only in their
    window share one kernel: `--tbc-outline-kernels` turns Gemma's local and
    global layers' static windows into it, their calls passing constants.

    A position bias may be added to the (capped) logits of a query at p and a
    key at j, computed inside the kernel (never a materialised [T, T] matrix):
    * `alibi_slopes` (one positive slope m_h per head): `m_h * (j - p)`
      (ALiBi; BLOOM's `m_h * j` and MPT's `m_h * (j - L + 1)` differ from it
      by a constant per row, which softmax ignores);
    * `relative_bias %table ... buckets = <num_buckets = ..., ...>`: the learned
      `table[bucket(j - p), h]`, `table` being `[num_buckets, heads]` (T5).

    ```mlir
    %o = tbc.attention %q, %k, %v heads = 32 kv_heads = 8 head_dim = 128 scale = 0.08838834764831845 causal
           : tensor<?x?x4096xf32>, tensor<?x?x1024xf32>, tensor<?x?x1024xf32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$query, Tbc_FloatTensor:$key, Tbc_FloatTensor:$value,
                       Optional<Tbc_FloatTensor>:$relative_bias,
                       Optional<I64>:$window_size,
                       I64Attr:$num_heads, I64Attr:$num_kv_heads, I64Attr:$head_dim,
                       F64Attr:$scale, UnitAttr:$causal, OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$softcap,
                       OptionalAttr<DenseF64ArrayAttr>:$alibi_slopes,
                       OptionalAttr<Tbc_RelativeBucketsAttr>:$buckets);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`relative_bias` $relative_bias^)?
    (`window` `(` $window_size^ `)`)? `heads` `=` $num_heads
    `kv_heads` `=` $num_kv_heads `head_dim` `=` $head_dim `scale` `=` $scale
    (`causal` $causal^)? (`window` `=` $window^)? (`softcap` `=` $softcap^)?
    (`alibi_slopes` `=` $alibi_slopes^)? (`buckets` `=` $buckets^)?
    attr-dict `:` type($query) `,` type($key) `,` type($value) (`,` type($relative_bias)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pointwise
//===----------------------------------------------------------------------===//

def Tbc_GluOp : Tbc_Op<"glu", [Pure, AllTypesMatch<["gate", "up", "result"]>]> {
  let summary = "gated linear unit: act(gate) * up";
  let description = [{
    SwiGLU (`silu`), GeGLU (`gelu`, `gelu_tanh`), ReGLU (`relu`) or the
    original sigmoid GLU.

    ```mlir
    %h = tbc.glu silu %gate, %up : tensor<?x?x14336xf32>
    ```
  }];
  let arguments = (ins Tbc_Activation:$act, Tbc_FloatTensor:$gate, Tbc_FloatTensor:$up);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = "$act $gate `,` $up attr-dict `:` type($result)";
}

def Tbc_ActivationOp : Tbc_Op<"activation", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "pointwise activation (plain MLPs)";
  let description = [{
    ```mlir
    %h = tbc.activation gelu %x : tensor<?x?x2048xf32>
    ```
  }];
  let arguments = (ins Tbc_Activation:$act, Tbc_FloatTensor:$input);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = "$act $input attr-dict `:` type($result)";
}

def Tbc_SoftcapOp : Tbc_Op<"softcap", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "soft-capping: cap * tanh(x / cap)";
  let description = [{
    Bounds values smoothly to (-cap, cap); Gemma 2 applies it to the final
    logits (attention logits use `tbc.attention`'s `softcap`).

    ```mlir
    %y = tbc.softcap %x cap = 30.0 : tensor<?x?x256000xf32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$input, F64Attr:$cap);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = "$input `cap` `=` $cap attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tbc_ScaleOp : Tbc_Op<"scale", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "multiplication by a constant";
  let description = [{
    Cohere's `logit_scale` and Granite's `logits_scaling` (as its
    reciprocal) on the logits; Granite's `residual_multiplier` on each
    sub-layer's output before its residual add. `--tbc-fuse-scale` makes it
    a step of the projection epilogue that produces `input`.

    ```mlir
    %y = tbc.scale %logits by 6.250000e-02 : tensor<?x?x256000xf32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$input, F64Attr:$factor);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tbc_ClipOp : Tbc_Op<"clip", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "clamp to [-limit, limit]";
  let description = [{
    MPT's `clip_qkv`: the fused QKV projection's output clamped before it is
    split into heads.

    ```mlir
    %y = tbc.clip %qkv limit = 8.0 : tensor<?x?x3072xf32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$input, F64Attr:$limit);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = "$input `limit` `=` $limit attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tbc_AddOp : Tbc_Op<"add", [Pure, Commutative, AllTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "elementwise addition (residual connections)";
  let description = [{
    ```mlir
    %h = tbc.add %x, %attn : tensor<?x?x4096xf32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$lhs, Tbc_FloatTensor:$rhs);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

include "TbcFusedOps.td"

#endif // TBC_OPS_TD
