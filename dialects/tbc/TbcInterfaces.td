//===- TbcInterfaces.td - what families of tbc ops share ---*- tablegen -*-===//
//
// Passes and lowerings that treat a family of ops alike (a norm is a norm,
// a projection is a projection) ask these interfaces instead of listing the
// ops: a new projection or norm op joins by implementing one.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_INTERFACES_TD
#define TBC_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Tbc_ProjectionOpInterface : OpInterface<"ProjectionOpInterface"> {
  let cppNamespace = "::tbc";
  let description = [{
    An op computing `x W^T (+ b)` over the last dimension of its input
    (`tbc.linear`, `tbc.fused_linear`): the weight is `[out, in]`, or
    `[in, out]` with `weight_in_out` (GPT-2's Conv1D). Operand 0 is the
    input and operand 1 the weight.
  }];
  let methods = [
    InterfaceMethod<"The activation input.", "::mlir::Value", "getInput">,
    InterfaceMethod<"The weight.", "::mlir::Value", "getWeight">,
    InterfaceMethod<"The bias, or null.", "::mlir::Value", "getBias">,
    InterfaceMethod<"Whether the weight is [in, out].", "bool", "getWeightInOut">,
    InterfaceMethod<"Whether a norm prologue is already part of the op.", "bool",
                    "hasNormPrologue">,
    InterfaceMethod<"Width of the result's last dimension.", "int64_t", "getResultWidth",
                    (ins), [{
      return ::llvm::cast<::mlir::ShapedType>($_op->getResult(0).getType()).getShape().back();
    }]>,
  ];
}

def Tbc_NormOpInterface : OpInterface<"NormOpInterface"> {
  let cppNamespace = "::tbc";
  let description = [{
    A normalisation over the last dimension of one input (`tbc.rms_norm`,
    `tbc.layer_norm`): its kind, gain (with Gemma's offset), optional bias,
    epsilon and group count (per-head norms), so that fusions and lowerings
    handle every norm with one code path.
  }];
  let methods = [
    InterfaceMethod<"The normalised input.", "::mlir::Value", "getInput">,
    InterfaceMethod<"The gain vector.", "::mlir::Value", "getWeight">,
    InterfaceMethod<"rms or layer.", "::tbc::NormKind", "getNormKind">,
    InterfaceMethod<"The bias (LayerNorm's beta), or null.", "::mlir::Value", "getNormBias">,
    InterfaceMethod<"Epsilon.", "::mlir::FloatAttr", "getEpsAttr">,
    InterfaceMethod<"The gain offset (1 for Gemma's 1 + w), or null.", "::mlir::FloatAttr",
                    "getGainOffsetAttr">,
    InterfaceMethod<"The gain offset as a number (0 when absent).", "double",
                    "getGainOffsetValue">,
    InterfaceMethod<"Groups of the last dimension normalised apart (1: whole row).",
                    "int64_t", "getNumGroups">,
  ];
}

#endif // TBC_INTERFACES_TD
