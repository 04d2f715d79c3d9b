//===- TbcFusedOps.td - ops produced by the fusion passes --*- tablegen -*-===//
//
// Fused ops replace chains of core ops; each says which ones. Weight
// transforms are pure functions of parameters that the runtime carries out
// once, when it binds the user's unmodified checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_FUSED_OPS_TD
#define TBC_FUSED_OPS_TD

include "TbcDialect.td"
include "TbcAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Marks ops evaluated at bind time on parameters, never per token.
def Tbc_WeightTransform : NativeOpTrait<"WeightTransform"> {
  let cppNamespace = "::tbc";
}

//===----------------------------------------------------------------------===//
// Fused compute
//===----------------------------------------------------------------------===//

def Tbc_FusedLinearOp : Tbc_Op<"fused_linear",
    [Pure, AttrSizedOperandSegments, Tbc_ProjectionOpInterface]> {
  let summary = "projection with a norm prologue and an activation/GLU/soft-cap/residual epilogue";
  let description = [{
    Replaces `rms_norm`/`layer_norm` → `linear` (→ `glu` | `activation`)
    (→ `softcap`) chains, and the `split` + `glu` of a fused gate/up weight.
    The normalised tensor is never materialised:

    * prologue `norm = rms`: `z = rsqrt(mean(x^2) + eps) * (x W^T) + b`;
      the gain is already folded into `W` (`tbc.fold_gain`).
    * prologue `norm = layer`: `z = rstd * (x W^T - mean(x) * c) + b` with
      `c = mean_correction` = the row sums of the folded weight
      (`tbc.weight_row_sums`) and the LayerNorm bias folded into `b`
      (`tbc.fold_bias`).
    * no prologue: `z = x W^T + b`.
    * with `gain(%g)` (and `gain_offset`) the norm's gain scales the
      activation instead of the weight: `x` is read as `x * (offset + g)`
      (RMS; LayerNorm: `c = W g`, `tbc.fold_bias` of the gain). Used where
      the weight is shared, as a tied LM head shares the embedding table:
      folding the gain would copy the table.

    The epilogue applies, in order: `glu`: `y = act(z[:, :F]) * z[:, F:]`
    with `F = rows / 2` (the weight holds the gate rows, then the up rows,
    as Phi-3's `gate_up_proj`); or `act` alone: `y = act(z)`; then
    `scale`: `y = scale * y` (`tbc.scale`, `--tbc-fuse-scale`); then
    `softcap`: `y = cap * tanh(y / cap)`. Statistics and accumulation are
    float32. `weight_in_out` means the weight is `[in, out]` (GPT-2).

    With `rope = #tbc.rotary<...>` (and `positions(%pos)`, plus
    `lengths(%len)` for a length-dependent scaling) the epilogue rotates
    the leading `columns` output columns as `tbc.rope` would rotate them
    (each element with its pair's partner column, both after the bias),
    so the projection's output leaves the kernel rotated: the queries and
    keys of a merged QKV projection. RoPE excludes the other epilogues.

    With `residual(%r)` the epilogue's last step adds `%r` (of the result's
    type): `y = epilogue(z) + r`, a residual connection's add
    (`--tbc-fuse-residual-projection`), so the block's hidden state leaves
    the projection that completes it instead of a kernel of its own.

    ```mlir
    %qkv = tbc.fused_linear %x, %w norm = rms eps = 1.0e-05
             : (tensor<?x?x4096xf32>, tensor<6144x4096xf32>) -> tensor<?x?x6144xf32>
    %h = tbc.fused_linear %x, %wgu norm = rms eps = 1.0e-05 act = silu glu
             : (tensor<?x?x4096xf32>, tensor<28672x4096xf32>) -> tensor<?x?x14336xf32>
    %logits = tbc.fused_linear %x, %embed gain(%g) norm = rms eps = 1.0e-06 gain_offset = 1.0
             : (tensor<?x?x2304xf32>, tensor<256000x2304xf32>, tensor<2304xf32>) -> tensor<?x?x256000xf32>
    %qkv = tbc.fused_linear %x, %wqkv positions(%pos) norm = rms eps = 1.0e-05
             rope = <style = neox, columns = 5120, head_dim = 128, rotary_dim = 128, theta = 5.0e+05>
             : (tensor<?x?x4096xf32>, tensor<6144x4096xf32>, tensor<?x?xi32>) -> tensor<?x?x6144xf32>
    %h2 = tbc.fused_linear %a, %wo residual(%h)
             : (tensor<?x?x4096xf32>, tensor<4096x4096xf32>, tensor<?x?x4096xf32>) -> tensor<?x?x4096xf32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$input, Tbc_FloatTensor:$weight,
                       Optional<Tbc_FloatTensor>:$bias,
                       Optional<Tbc_FloatTensor>:$mean_correction,
                       Optional<Tbc_FloatTensor>:$gain,
                       Optional<Tbc_IndexTensor>:$positions,
                       Optional<Tbc_IndexTensor>:$lengths,
                       Optional<Tbc_FloatTensor>:$residual,
                       OptionalAttr<Tbc_NormKind>:$norm, OptionalAttr<F64Attr>:$eps,
                       OptionalAttr<F64Attr>:$gain_offset,
                       OptionalAttr<Tbc_Activation>:$act, UnitAttr:$glu,
                       OptionalAttr<F64Attr>:$scale, OptionalAttr<F64Attr>:$softcap,
                       OptionalAttr<Tbc_RotaryEpilogueAttr>:$rope, UnitAttr:$weight_in_out);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `)`)? (`mean_correction` `(` $mean_correction^ `)`)?
    (`gain` `(` $gain^ `)`)? (`positions` `(` $positions^ `)`)? (`lengths` `(` $lengths^ `)`)?
    (`residual` `(` $residual^ `)`)? (`norm` `=` $norm^)? (`eps` `=` $eps^)?
    (`gain_offset` `=` $gain_offset^)? (`act` `=` $act^)? (`glu` $glu^)?
    (`scale` `=` $scale^)? (`softcap` `=` $softcap^)? (`rope` `=` $rope^)? (`weight_in_out` $weight_in_out^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    int64_t getInFeatures();
    /// Rows of the projection: 2 F for a GLU epilogue, else the output width.
    int64_t getProjectionWidth();
    bool hasNormPrologue() { return getNorm().has_value(); }
  }];
  let hasVerifier = 1;
}

def Tbc_AddNormOp : Tbc_Op<"add_norm", [Pure, AllTypesMatch<["lhs", "rhs", "sum", "normed"]>]> {
  let summary = "residual add followed by a norm: returns the sum and its norm";
  let description = [{
    Replaces `%s = tbc.add %a, %b` followed by `tbc.rms_norm %s` /
    `tbc.layer_norm %s`: one pass over the rows produces `sum = a + b` and
    `normed = norm(sum)`, so the sum is not re-read from memory.

    ```mlir
    %sum, %n = tbc.add_norm rms %a, %b, %w eps = 1.0e-05 : tensor<?x?x512xf32>, tensor<512xf32>
    ```
  }];
  let arguments = (ins Tbc_NormKind:$kind, Tbc_FloatTensor:$lhs, Tbc_FloatTensor:$rhs,
                       Tbc_FloatTensor:$weight, Optional<Tbc_FloatTensor>:$bias,
                       F64Attr:$eps, OptionalAttr<F64Attr>:$gain_offset);
  let results = (outs Tbc_FloatTensor:$sum, Tbc_FloatTensor:$normed);
  let assemblyFormat = [{
    $kind $lhs `,` $rhs `,` $weight (`,` $bias^)? `eps` `=` $eps (`gain_offset` `=` $gain_offset^)?
    attr-dict `:` type($lhs) `,` type($weight) (`,` type($bias)^)?
  }];
  let extraClassDeclaration = [{
    /// The gain offset as a number (0 when absent), as the norms' own.
    double getGainOffsetValue() {
      auto v = getGainOffset();
      return v ? v->convertToDouble() : 0.0;
    }
  }];
  let hasVerifier = 1;
}

def Tbc_NormAddOp : Tbc_Op<"norm_add", [Pure, AllTypesMatch<["input", "residual", "result"]>]> {
  let summary = "a norm whose result is added to a residual: returns residual + norm(input)";
  let description = [{
    Replaces `%n = tbc.rms_norm %x` / `tbc.layer_norm %x` followed by
    `tbc.add %r, %n` where the add is the norm's only use: the post-norm of
    a sandwich block (Gemma 2 and 3) or of OLMo 2, normalised and added to
    the residual stream in one pass over the rows, so the normalised rows
    are never written and re-read, and the add is no kernel of its own.

    ```mlir
    %h = tbc.norm_add rms %x, %w residual(%r) eps = 1.0e-06 gain_offset = 1.0 : tensor<?x?x512xf32>, tensor<512xf32>
    ```
  }];
  let arguments = (ins Tbc_NormKind:$kind, Tbc_FloatTensor:$input, Tbc_FloatTensor:$residual,
                       Tbc_FloatTensor:$weight, Optional<Tbc_FloatTensor>:$bias,
                       F64Attr:$eps, OptionalAttr<F64Attr>:$gain_offset);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = [{
    $kind $input `,` $weight (`,` $bias^)? `residual` `(` $residual `)` `eps` `=` $eps
    (`gain_offset` `=` $gain_offset^)? attr-dict `:` type($input) `,` type($weight)
    (`,` type($bias)^)?
  }];
  let extraClassDeclaration = [{
    /// The gain offset as a number (0 when absent), as the norms' own.
    double getGainOffsetValue() {
      auto v = getGainOffset();
      return v ? v->convertToDouble() : 0.0;
    }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Weight transforms (bind time)
//===----------------------------------------------------------------------===//

def Tbc_ConcatOp : Tbc_Op<"concat", [Pure, Tbc_WeightTransform]> {
  let summary = "bind-time concatenation of parameters";
  let description = [{
    Concatenates weights along `dim` (rows of `[out, in]` weights: 0; of
    `[in, out]` weights: 1) or biases (rank 1, dim 0). Produced by QKV and
    gate/up merging; carried out once by the runtime when it binds weights.

    ```mlir
    %wqkv = tbc.concat %wq, %wk, %wv dim = 0 : (tensor<4096x4096xf32>, tensor<1024x4096xf32>, tensor<1024x4096xf32>) -> tensor<6144x4096xf32>
    ```
  }];
  let arguments = (ins Variadic<Tbc_FloatTensor>:$inputs, I64Attr:$dim);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = "$inputs `dim` `=` $dim attr-dict `:` functional-type($inputs, $result)";
  let hasVerifier = 1;
}

def Tbc_FillOp : Tbc_Op<"fill", [Pure, Tbc_WeightTransform]> {
  let summary = "a bind-time weight of one value: the gain of a norm that learns none";
  let description = [{
    Every element of the result is `value`. A LayerNorm without a learned
    gain or bias (OLMo 1's non-parametric norms, OPT's
    `layer_norm_elementwise_affine = false`) normalises with a gain of ones:
    a `tbc.fill` of 1.0 in its weight's place lets it run in the kernels and
    fusions every other norm does (folded into a projection, `W * 1`, at
    bind time). The runtime makes it when it binds the checkpoint, which
    holds no such tensor.

    ```mlir
    %ones = tbc.fill 1.0 : tensor<4096xf32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tbc_RowSliceOp : Tbc_Op<"row_slice", [Pure, Tbc_WeightTransform]> {
  let summary = "bind-time rows [start, start + n) of a matrix";
  let description = [{
    `result[r, :] = input[start + r, :]` for the result's n rows. OPT's
    learned position table holds two rows before position 0's (its
    `padding_idx` offset): the table the embedding gathers from starts at
    row 2, and its rows bound the positions as any learned table's do.

    ```mlir
    %wpe = tbc.row_slice %table start = 2 : tensor<2050x768xf32> -> tensor<2048x768xf32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$input, I64Attr:$start);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = "$input `start` `=` $start attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tbc_SwapHalvesOp : Tbc_Op<"swap_halves", [Pure, Tbc_WeightTransform,
                                              AllTypesMatch<["input", "result"]>]> {
  let summary = "bind-time swap of the two halves of every block of rows";
  let description = [{
    Splits the rows (the elements of a vector) into blocks of `block`, and in
    each block puts the second half's rows before the first's. NanoChat's
    RoPE turns q and k the other way round (its `rotate_half` is
    `cat(x2, -x1)`): that rotation of a head is the NeoX rotation of the
    head with its halves swapped, swapped back. Swapping the halves of every
    head of both q and k leaves their dot products as they are, so a
    `tbc.swap_halves` of the q/k projections' rows (and of their biases and
    QK-norm gains) at bind time lets `tbc.rope` and every kernel stay as
    they are.

    ```mlir
    %wq = tbc.swap_halves %q block = 128 : tensor<2048x2048xf32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$input, I64Attr:$block);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = "$input `block` `=` $block attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Tbc_FoldGainOp : Tbc_Op<"fold_gain", [Pure, Tbc_WeightTransform,
                                          AllTypesMatch<["weight", "result"]>]> {
  let summary = "bind-time W * diag(offset + gain): a norm's gain folded into a projection";
  let description = [{
    `result[o, i] = weight[o, i] * (offset + gain[i])` for `[out, in]`
    weights, `result[i, o] = (offset + gain[i]) * weight[i, o]` with
    `weight_in_out`. Lets a fused projection skip the gain multiply.

    ```mlir
    %wf = tbc.fold_gain %w, %gamma offset = 1.0 : tensor<4096x3584xf32>, tensor<3584xf32>
    ```
  }];
  let arguments = (ins Tbc_FloatTensor:$weight, Tbc_FloatTensor:$gain,
                       OptionalAttr<F64Attr>:$offset, UnitAttr:$weight_in_out);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = [{
    $weight `,` $gain (`offset` `=` $offset^)? (`weight_in_out` $weight_in_out^)? attr-dict
    `:` type($weight) `,` type($gain)
  }];
  let hasVerifier = 1;
}

def Tbc_WeightRowSumsOp : Tbc_Op<"weight_row_sums", [Pure, Tbc_WeightTransform]> {
  let summary = "bind-time sum over the input features of each output row";
  let description = [{
    `result[o] = sum_i weight[o, i]` (or `sum_i weight[i, o]` with
    `weight_in_out`): the mean correction of a LayerNorm fused into a
    projection, `(x - mean) W^T = x W^T - mean * result`.
  }];
  let arguments = (ins Tbc_FloatTensor:$weight, UnitAttr:$weight_in_out);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = [{
    $weight (`weight_in_out` $weight_in_out^)? attr-dict `:` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tbc_FoldBiasOp : Tbc_Op<"fold_bias", [Pure, Tbc_WeightTransform]> {
  let summary = "bind-time W beta + b: a LayerNorm bias folded into a projection bias";
  let description = [{
    `result[o] = sum_i weight[o, i] * beta[i] + bias[o]` (`bias` optional;
    `weight[i, o]` with `weight_in_out`).
  }];
  let arguments = (ins Tbc_FloatTensor:$weight, Tbc_FloatTensor:$beta,
                       Optional<Tbc_FloatTensor>:$bias, UnitAttr:$weight_in_out);
  let results = (outs Tbc_FloatTensor:$result);
  let assemblyFormat = [{
    $weight `,` $beta (`,` $bias^)? (`weight_in_out` $weight_in_out^)? attr-dict
    `:` type($weight) `,` type($beta) (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // TBC_FUSED_OPS_TD
