//===- TbcDialect.cpp - tbc dialect registration and attributes -----------===//

#include "tbc/Dialect/TbcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace tbc;

#include "tbc/TbcDialect.cpp.inc"
#include "tbc/TbcEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tbc/TbcAttrs.cpp.inc"

void TbcDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tbc/TbcAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tbc/TbcOps.cpp.inc"
      >();
}

LogicalResult
RopeScalingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        RopeScalingKind kind, APFloat factorF,
                        APFloat lowF, APFloat highF,
                        int64_t originalMaxPosition) {
  double factor = factorF.convertToDouble();
  double lowFreqFactor = lowF.convertToDouble();
  double highFreqFactor = highF.convertToDouble();
  if (!(factor > 0))
    return emitError() << "rope scaling factor must be positive, got "
                       << factor;
  if (kind != RopeScalingKind::llama3)
    return success();
  if (!(lowFreqFactor > 0) || !(highFreqFactor > lowFreqFactor))
    return emitError() << "llama3 rope scaling needs 0 < low_freq_factor < "
                          "high_freq_factor, got "
                       << lowFreqFactor << " and " << highFreqFactor;
  if (originalMaxPosition <= 0)
    return emitError() << "llama3 rope scaling needs a positive "
                          "original_max_position, got "
                       << originalMaxPosition;
  return success();
}
