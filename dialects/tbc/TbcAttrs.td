//===- TbcAttrs.td - tbc enums and attributes --------------*- tablegen -*-===//

#ifndef TBC_ATTRS_TD
#define TBC_ATTRS_TD

include "TbcDialect.td"
include "mlir/IR/EnumAttr.td"

// Pointwise non-linearities used by FFNs and GLUs. `gelu` is the exact (erf)
// GELU; `gelu_tanh` is the tanh approximation (gelu_new, gelu_pytorch_tanh);
// `relu2` is the squared ReLU, max(x, 0)^2 (Primer; Nemotron's and Arcee's
// MLPs).
def Tbc_Activation : I32EnumAttr<"Activation", "pointwise activation", [
    I32EnumAttrCase<"silu", 0>, I32EnumAttrCase<"gelu", 1>,
    I32EnumAttrCase<"gelu_tanh", 2>, I32EnumAttrCase<"relu", 3>,
    I32EnumAttrCase<"sigmoid", 4>, I32EnumAttrCase<"relu2", 5>]> {
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
    I32EnumAttrCase<"linear", 0>, I32EnumAttrCase<"llama3", 1>, I32EnumAttrCase<"yarn", 2>,
    I32EnumAttrCase<"longrope", 3>, I32EnumAttrCase<"dynamic", 4>]> {
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

// An optional list of doubles, `[1.0, 2.5]`, each printed to round-trip
// exactly (LongRoPE's factors are float32 values given to 17 digits).
class Tbc_F64ArrayParameter<string desc> : OptionalParameter<"::mlir::DenseF64ArrayAttr", desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::mlir::DenseF64ArrayAttr> {
      ::llvm::SmallVector<double> values;
      if ($_parser.parseCommaSeparatedList(::mlir::AsmParser::Delimiter::Square, [&]() {
            double v;
            if ($_parser.parseFloat(v))
              return ::mlir::failure();
            values.push_back(v);
            return ::mlir::success();
          }))
        return ::mlir::failure();
      return ::mlir::DenseF64ArrayAttr::get($_parser.getContext(), values);
    }() }];
  let printer = [{
    $_printer << '[';
    ::llvm::interleaveComma($_self.asArrayRef(), $_printer,
                            [&](double v) { $_printer.printFloat(::llvm::APFloat(v)); });
    $_printer << ']';
  }];
}

def Tbc_RopeScalingAttr : AttrDef<Tbc_Dialect, "RopeScaling"> {
  let mnemonic = "rope_scaling";
  let summary = "frequency scaling of rotary embeddings (linear, llama3, yarn, longrope, dynamic)";
  let description = [{
    The scalings of transformers' ROPE_INIT_FUNCTIONS, with their names:

    * `linear` divides every inverse frequency by `factor`.
    * `llama3` divides only the low frequencies (wavelength >
      original_max_position / low_freq_factor) by `factor`, keeps the high
      ones (wavelength < original_max_position / high_freq_factor) and
      interpolates smoothly in between.
    * `yarn` blends interpolated (`/ factor`) and original frequencies with a
      linear ramp over the dims between the correction range of `beta_fast`
      and `beta_slow` rotations in `original_max_position` (floored/ceiled
      when `truncate`), and multiplies cos and sin by `attention_factor`.
    * `longrope` divides frequency i by `short_factor[i]` while a sequence is
      at most `original_max_position` long and by `long_factor[i]` once it is
      longer (chosen per call by the sequence's length, as transformers
      does; keys already cached keep their rotation), and multiplies cos and
      sin by `attention_factor`.
    * `dynamic` (NTK) keeps the frequencies up to `original_max_position`
      (the config's max_position_embeddings) and, for a sequence of length
      L beyond it, raises the base to `theta * (factor L / M - (factor - 1))
      ^ (d / (d - 2))`, recomputed per call.

    `longrope` and `dynamic` depend on the sequence's length, so the
    `tbc.rope` using them takes the `lengths` operand. Parameters a kind does
    not use keep their defaults.

    Example: `#tbc.rope_scaling<kind = llama3, factor = 8.0, low_freq_factor = 1.0,
    high_freq_factor = 4.0, original_max_position = 8192>`
  }];
  let parameters = (ins
    EnumParameter<Tbc_RopeScalingKind>:$kind,
    Tbc_F64Parameter<"scale factor">:$factor,
    Tbc_F64Parameter<"llama3 low frequency factor", "::llvm::APFloat(1.0)">:$low_freq_factor,
    Tbc_F64Parameter<"llama3 high frequency factor", "::llvm::APFloat(4.0)">:$high_freq_factor,
    DefaultValuedParameter<"int64_t", "8192">:$original_max_position,
    Tbc_F64Parameter<"yarn/longrope scale of cos and sin", "::llvm::APFloat(1.0)">:$attention_factor,
    Tbc_F64Parameter<"yarn fast boundary (rotations)", "::llvm::APFloat(32.0)">:$beta_fast,
    Tbc_F64Parameter<"yarn slow boundary (rotations)", "::llvm::APFloat(1.0)">:$beta_slow,
    DefaultValuedParameter<"bool", "true">:$truncate,
    Tbc_F64ArrayParameter<"longrope short factors">:$short_factor,
    Tbc_F64ArrayParameter<"longrope long factors">:$long_factor);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether the frequencies depend on the sequence's length (the
    /// tbc.rope using it takes `lengths`).
    static bool dependsOnLength(RopeScalingKind kind) {
      return kind == RopeScalingKind::longrope || kind == RopeScalingKind::dynamic;
    }
    bool dependsOnLength() const { return dependsOnLength(getKind()); }
  }];
}

def Tbc_RotaryEpilogueAttr : AttrDef<Tbc_Dialect, "RotaryEpilogue"> {
  let mnemonic = "rotary";
  let summary = "RoPE applied in a projection's epilogue (tbc.fused_linear's `rope`)";
  let description = [{
    The parameters of the `tbc.rope` ops a projection's output feeds, for the
    leading `columns` output columns (the query heads, then the key heads of
    a merged QKV projection, each `head_dim` wide); later columns (the
    values) pass through. `style`, `head_dim`, `rotary_dim`, `theta` and
    `scaling` mean what they mean on `tbc.rope`.

    Example: `#tbc.rotary<style = neox, columns = 5120, head_dim = 128,
    rotary_dim = 128, theta = 500000.0>`
  }];
  let parameters = (ins
    EnumParameter<Tbc_RopeStyle>:$style,
    "int64_t":$columns,
    "int64_t":$head_dim,
    "int64_t":$rotary_dim,
    Tbc_F64Parameter<"base of the inverse frequencies">:$theta,
    OptionalParameter<"RopeScalingAttr">:$scaling);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool dependsOnLength() const {
      return getScaling() && getScaling().dependsOnLength();
    }
  }];
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
