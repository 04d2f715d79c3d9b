//===- TbcAttrs.td - tbc enums and attributes --------------*- tablegen -*-===//

#ifndef TBC_ATTRS_TD
#define TBC_ATTRS_TD

include "TbcDialect.td"
include "mlir/IR/EnumAttr.td"

// Pointwise non-linearities used by FFNs and GLUs. `gelu` is the exact (erf)
// GELU; `gelu_tanh` is the tanh approximation (gelu_new, gelu_pytorch_tanh).
def Tbc_Activation : I32EnumAttr<"Activation", "pointwise activation", [
    I32EnumAttrCase<"silu", 0>, I32EnumAttrCase<"gelu", 1>,
    I32EnumAttrCase<"gelu_tanh", 2>, I32EnumAttrCase<"relu", 3>,
    I32EnumAttrCase<"sigmoid", 4>]> {
  let cppNamespace = "::tbc";
}

// How RoPE pairs up the rotated dimensions: `neox` rotates the two halves of
// the rotary dims (rotate_half), `gptj` rotates interleaved pairs (2i, 2i+1).
def Tbc_RopeStyle : I32EnumAttr<"RopeStyle", "rotary embedding layout", [
    I32EnumAttrCase<"neox", 0>, I32EnumAttrCase<"gptj", 1>]> {
  let cppNamespace = "::tbc";
}

def Tbc_NormKind : I32EnumAttr<"NormKind", "normalisation", [
    I32EnumAttrCase<"rms", 0>, I32EnumAttrCase<"layer", 1>]> {
  let cppNamespace = "::tbc";
}

def Tbc_RopeScalingKind : I32EnumAttr<"RopeScalingKind", "RoPE frequency scaling", [
    I32EnumAttrCase<"linear", 0>, I32EnumAttrCase<"llama3", 1>]> {
  let cppNamespace = "::tbc";
}

// A double-precision attribute parameter printed and parsed as a plain float.
class Tbc_F64Parameter<string desc, string default = ""> :
    AttrOrTypeParameter<"::llvm::APFloat", desc> {
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
      double v;
      if ($_parser.parseFloat(v)) return ::mlir::failure();
      return ::llvm::APFloat(v);
    }() }];
  let printer = "$_printer.printFloat($_self)";
  let defaultValue = default;
}

def Tbc_RopeScalingAttr : AttrDef<Tbc_Dialect, "RopeScaling"> {
  let mnemonic = "rope_scaling";
  let summary = "frequency scaling of rotary embeddings (linear or llama3)";
  let description = [{
    `linear` divides every inverse frequency by `factor`. `llama3` divides only
    the low frequencies (wavelength > original_max_position / low_freq_factor)
    by `factor`, keeps the high ones (wavelength < original_max_position /
    high_freq_factor) and interpolates smoothly in between. `low_freq_factor`,
    `high_freq_factor` and `original_max_position` are ignored by `linear`.

    Example: `#tbc.rope_scaling<kind = llama3, factor = 8.0, low_freq_factor = 1.0,
    high_freq_factor = 4.0, original_max_position = 8192>`
  }];
  let parameters = (ins
    EnumParameter<Tbc_RopeScalingKind>:$kind,
    Tbc_F64Parameter<"scale factor">:$factor,
    Tbc_F64Parameter<"llama3 low frequency factor", "::llvm::APFloat(1.0)">:$low_freq_factor,
    Tbc_F64Parameter<"llama3 high frequency factor", "::llvm::APFloat(4.0)">:$high_freq_factor,
    DefaultValuedParameter<"int64_t", "8192">:$original_max_position);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tbc_RelativeBucketsAttr : AttrDef<Tbc_Dialect, "RelativeBuckets"> {
  let mnemonic = "relative_buckets";
  let summary = "T5's bucketing of relative positions for a learned attention bias";
  let description = [{
    The bucket of a key at position j for a query at p (relative position
    r = j - p), as transformers' T5Attention._relative_position_bucket:
    `bidirectional` gives keys after the query (r > 0) the upper half of the
    buckets; otherwise (causal) only n = max(-r, 0) counts. The first half
    of a side's buckets are exact distances n < max_exact (= side / 2), the
    rest grow logarithmically up to `max_distance`, beyond which distances
    share the last bucket.

    Example: `#tbc.relative_buckets<num_buckets = 32, max_distance = 128>`
  }];
  let parameters = (ins "int64_t":$num_buckets, "int64_t":$max_distance,
                        DefaultValuedParameter<"bool", "false">:$bidirectional);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // TBC_ATTRS_TD
