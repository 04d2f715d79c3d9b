//===- TbcTransforms.td - tbc-to-tbc passes ----------------*- tablegen -*-===//
//
// The target-independent passes: fusion, weight-transform hoisting and
// kernel outlining, on the tbc dialect alone (lib/Transforms, declared in
// tbc/Transforms/Passes.h). Lowerings are in TbcConversion.td.
// docs/passes.md explains the pipeline order and the byte counts.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_TRANSFORMS_TD
#define TBC_TRANSFORMS_TD

include "mlir/Pass/PassBase.td"

def TbcMergeQKV : Pass<"tbc-merge-qkv"> {
  let summary = "Merge sibling projections of one input (q, k, v) into one";
  let description = [{
    `tbc.linear` ops that read the same input, with weights known at bind
    time, the same weight layout and all-or-none biases, become one
    `tbc.linear` on a bind-time `tbc.concat` of their weights (and biases),
    followed by a `tbc.split` that hands each former user its slice. The
    input is read once instead of three times. Phi-3's `qkv_proj` and
    GPT-NeoX/GPT-2's fused QKV already have this form.
  }];
  let dependentDialects = ["::tbc::TbcDialect"];
}

def TbcFuseGateUp : Pass<"tbc-fuse-gate-up"> {
  let summary = "Fuse gate and up projections feeding tbc.glu into one gated projection";
  let description = [{
    `tbc.glu act(linear(x, Wg), linear(x, Wu))` becomes one
    `tbc.fused_linear x, concat(Wg, Wu) act = ... glu`: one weight holding
    the gate rows then the up rows, and the act ⊙ mul epilogue applied to
    the accumulators, so neither gate nor up is written out. Phi-3's
    `gate_up_proj` (`split` of one projection feeding the GLU) maps onto
    the same op without copying. A plain MLP's `activation(linear(x, W))`
    becomes `fused_linear` with an activation epilogue.
  }];
  let dependentDialects = ["::tbc::TbcDialect"];
}

def TbcFuseNormProjection : Pass<"tbc-fuse-norm-projection"> {
  let summary = "Fuse RMSNorm/LayerNorm into the projections that read it";
  let description = [{
    A norm whose every user is a projection (`tbc.linear`, or a
    `tbc.fused_linear` without a norm prologue) is computed inside each
    projection: the per-row statistic is taken while the row is loaded, the
    gain is folded into the weight at bind time (`tbc.fold_gain`, with
    Gemma's `1 + w` offset), and for LayerNorm the mean term becomes a
    per-row correction `mean(x) * rowsum(W')` (`tbc.weight_row_sums`) and
    the bias `W beta + b` (`tbc.fold_bias`). The normalised tensor is never
    written.

    A projection whose weight has other users (a tied LM head shares the
    embedding table) keeps the gain off the weight, since folding would
    duplicate a vocab x hidden table: the fused op takes `gain(%g)` and
    scales the activation as it reads it (LayerNorm: the mean correction is
    `W g`, a `tbc.fold_bias` of the gain). Not with a LayerNorm gain offset.
    With `gain-on-activation` every projection takes its gain that way: a
    16-bit weight times the gain would be rounded a second time, away from
    the checkpoint's values (the tensor-core kernels scale `x` as they
    round it to 16 bits anyway).

    Left unfused, because the fused form would cost more:
    * the normalised tensor has another user (a residual in post-norm
      blocks, a non-projection op): it must be written anyway, so the
      projections reading it is cheaper than recomputing the statistic;
    * grouped (per-head) RMSNorm, whose users are RoPE, not projections.
  }];
  let options = [
    Option<"gainOnActivation", "gain-on-activation", "bool", /*default=*/"false",
           "Never fold a norm's gain into a weight: scale the activation "
           "instead (16-bit weights)">
  ];
  let dependentDialects = ["::tbc::TbcDialect"];
}

def TbcFuseRope : Pass<"tbc-fuse-rope"> {
  let summary = "Move RoPE into the epilogue of the projection producing the queries and keys";
  let description = [{
    `tbc.rope` of a projection's output, or of the leading slices of a
    (merged QKV) projection's `tbc.split`, becomes the projection's `rope`
    epilogue: a `tbc.fused_linear` with `positions(%pos)` (and `lengths`)
    that rotates its first `columns` output columns before they are
    written, so the queries and keys are written once, already rotated, and
    never re-read by a RoPE kernel. Every rotated slice must be rotated
    alike (style, dims, theta, scaling, positions) and have no other user.

    Left unfused:
    * a per-head norm between the projection and RoPE (QK-norm: Qwen3,
      Gemma 3, OLMo 2): the norm needs the whole head before the rotation;
    * GPT-NeoX's per-head [q k v] layout (a grouped split): rotated columns
      are not a leading range;
    * projections with another epilogue (activation, GLU, soft-cap).
  }];
  let dependentDialects = ["::tbc::TbcDialect"];
}

def TbcFuseResidualNorm : Pass<"tbc-fuse-residual-norm"> {
  let summary = "Fuse a residual add and the norm of its result";
  let description = [{
    `n = norm(a + b)` becomes `tbc.add_norm`, producing the sum (for the
    next residual) and the normalised value in one pass over the rows. Run
    after `--tbc-fuse-norm-projection`, which absorbs most pre-norms into
    projections; this catches the rest (post-norm blocks, norms feeding
    non-projections). And `r + norm(x)`, where the add is the norm's only
    use (the post-norm of a sandwich block, Gemma 2 and 3, or of OLMo 2),
    becomes `tbc.norm_add`: the normalised rows are added to the residual
    as they are written.
  }];
  let dependentDialects = ["::tbc::TbcDialect"];
}

def TbcFuseScale : Pass<"tbc-fuse-scale"> {
  let summary = "Fuse constant scales into the projections that produce their input";
  let description = [{
    `tbc.scale(linear(...))` becomes a `tbc.fused_linear` with a `scale`
    epilogue: Cohere's and Granite's logit scales leave the LM head scaled,
    and Granite's residual multipliers the output and down projections
    (whose residual adds `--tbc-fuse-residual-projection` then folds in as
    well, `y = scale * z + r`). A projection already soft-capped, rotated or
    given its residual keeps the scale apart: its epilogue would apply it in
    another order.
  }];
  let dependentDialects = ["::tbc::TbcDialect"];
}

def TbcFuseSoftcap : Pass<"tbc-fuse-softcap"> {
  let summary = "Fuse soft-caps into the op that produces their input";
  let description = [{
    `tbc.softcap(linear(...))` (Gemma 2's final-logit soft-cap on the LM
    head) becomes a `tbc.fused_linear` with a soft-cap epilogue, so the
    logits are written once. Attention-logit soft-caps are already part of
    `tbc.attention` (`softcap = ...`): logits never exist as a tensor in
    tbc, so the frontend attaches them there directly.
  }];
  let dependentDialects = ["::tbc::TbcDialect"];
}

def TbcFuseResidualProjection : Pass<"tbc-fuse-residual-projection"> {
  let summary = "Fuse residual adds into the projections that produce one of their operands";
  let description = [{
    `x + linear(a, W)` (or a `tbc.fused_linear` without a RoPE epilogue)
    becomes `tbc.fused_linear %a, %W residual(%x)` when the add is the
    projection's only use: the sum leaves the projection's epilogue, and
    the add is no longer a kernel (a pass over the hidden state and, on a
    GPU, a launch) of its own. Run after `--tbc-fuse-residual-norm` (an add
    whose sum is normalised becomes `tbc.add_norm` instead) and
    `--tbc-fuse-softcap` (a cap comes before the residual). A tapped
    projection keeps its output and its add.
  }];
  let dependentDialects = ["::tbc::TbcDialect"];
}

def TbcHoistWeightTransforms : Pass<"tbc-hoist-weight-transforms", "::mlir::ModuleOp"> {
  let summary = "Move bind-time weight transforms out of layer functions onto the parameters";
  let description = [{
    Fusion inside a shared layer function creates weight transforms
    (`tbc.concat`, `tbc.fold_gain`, ...) on the function's weight
    arguments. This pass moves them to every call site, where they apply
    to that layer's `tbc.param`s, and passes their results in instead: the
    layer function then only computes, and the module's top level records
    exactly which transforms the runtime applies to which checkpoint
    tensors when it binds them. Arguments left unused are removed.
  }];
}

def TbcInsertTaps : Pass<"tbc-insert-taps", "::mlir::ModuleOp"> {
  let summary = "Mark values to tap with the Hugging Face module paths that produce them";
  let description = [{
    Run on the model as built, before fusion (`tbc compile --taps`). With
    `level=layers` each call of a layer function in @forward gets
    `tbc.tap = "<layer path>"` (`model.layers.3`): the path its parameters
    share, up to the layer index. With `level=all` every op whose result is
    the output of one checkpoint module gets that module's path too: norms,
    projections and unscaled embeddings, named after their weight
    (`input_layernorm`, `self_attn.o_proj`, `mlp.down_proj`, relative to the
    layer inside a layer function; a head that shares the embedding table is
    `lm_head`). The runtime copies out what these values hold
    (`tbc run --dump`, `tbc verify`).

    Taps do not stop fusion: an op a fusion replaces loses its tap, since
    the fused kernel never writes that value (a norm fused into its
    projections, q/k/v merged into one projection).
  }];
  let options = [
    Option<"level", "level", "std::string", /*default=*/"\"layers\"",
           "What to tap: layers (each layer's output) or all (also every "
           "norm, projection and embedding output)">
  ];
}

def TbcOutlineKernels : Pass<"tbc-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Outline every compute op into a kernel function";
  let description = [{
    Each tbc compute op of @forward and of the layer functions becomes a
    call to a private kernel function `@k<N>_<op>` (marked `tbc.kernel`)
    holding just that op. Layer functions are shared, so the number of
    kernels does not grow with the number of layers; what remains of
    @forward and the layer functions is the schedule the runtime follows
    (parameters, bind-time transforms, kernel calls, and `tbc.split` of the
    last dimension, which is a view). Attention kernels are marked
    `tbc.kv_cache`: the runtime passes each call site its own key/value
    cache. How a kernel's work is split (columns of a projection, heads of
    an attention) is each target's kernel ABI, decided from the op.

    Ops share a kernel when they compute the same thing (op, attributes and
    types). Attention ops that differ only in their static `window` (Gemma's
    local and global layers) first take it as a value, `window(%c)`, each
    call passing its own as an `arith.constant` (0: none), so that one
    attention kernel per variant serves both kinds of layer (the runtime
    passes the constant per step: the manifest's `scalars`).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // TBC_TRANSFORMS_TD
