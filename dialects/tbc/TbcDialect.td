//===- TbcDialect.td - the tbc dialect ---------------------*- tablegen -*-===//
//
// tbc describes *what* a transformer block computes, on tensors with value
// semantics. Weights are named parameters, never constants, so the same IR
// serves any checkpoint of a model.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_DIALECT_TD
#define TBC_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Tbc_Dialect : Dialect {
  let name = "tbc";
  let cppNamespace = "::tbc";
  let summary = "Transformer blocks: norms, projections, RoPE, attention, GLU FFNs";
  let description = [{
    The tbc dialect models the building blocks of decoder-only transformers at
    the level a model card describes them: RMSNorm/LayerNorm, linear
    projections, rotary embeddings, multi-/grouped-query attention, gated and
    plain feed-forward layers, soft-capping and residual adds. Activations are
    ranked tensors whose last dimension is the feature dimension (typically
    `[batch, seq, hidden]` with dynamic batch and sequence length). Fusion
    passes rewrite these ops into fewer, fatter tbc ops; lowerings turn them
    into linalg (CPU) or gpu/nvvm (CUDA).
  }];
  // Attributes tbc's passes put on ops they do not own; each is checked by
  // verifyOperationAttribute / verifyRegionArgAttribute (TbcDialect.cpp).
  let discardableAttrs = (ins
    // func.func: an outlined kernel (--tbc-outline-kernels), one tbc op.
    "::mlir::UnitAttr":$kernel,
    // func.func: a kernel (of tbc.attention) the runtime gives a KV cache.
    "::mlir::UnitAttr":$kv_cache,
    // builtin.module: what the model was built from (the manifest's fields).
    "::mlir::StringAttr":$architecture,
    "::mlir::IntegerAttr":$vocab_size,
    "::mlir::IntegerAttr":$max_positions,
    // func.func argument: the checkpoint tensor (or transform of tensors) it
    // receives, or token_ids / positions / hidden.
    "::mlir::StringAttr":$name,
    // A tensor tap (--tbc-insert-taps): on a tbc op, its result is the
    // output of this Hugging Face module (a path relative to the layer in
    // a layer function); on a call of a layer function, that layer's path
    // (its result is the layer's output). Fusion drops it with the op: a
    // value a fused kernel never writes cannot be tapped.
    "::mlir::StringAttr":$tap
  );
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

// Every tbc op: tensors have no zero or absurd dimensions (their element
// counts cannot overflow), float attributes are finite (no NaN eps, no
// infinite soft-cap). Checked before any op's own verifier.
def Tbc_SaneShapesAndAttrs : NativeOpTrait<"SaneShapesAndAttrs"> {
  let cppNamespace = "::tbc";
}

class Tbc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tbc_Dialect, mnemonic, !listconcat([Tbc_SaneShapesAndAttrs], traits)>;

// Activations and weights: f32, f16 or bf16 ranked tensors.
def Tbc_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;
// Token ids and positions.
def Tbc_IndexTensor : RankedTensorOf<[I32, I64]>;

#endif // TBC_DIALECT_TD
