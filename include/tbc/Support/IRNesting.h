//===- IRNesting.h - bound IR nesting before MLIR's parser sees it -*- C++ -*-===//
//
// MLIR's parser is recursive: 4,000 nested modules or 100k nested types
// overflow its stack. A linear scan of the text bounds the nesting of
// brackets first, so that such input is an error with a line, not a crash.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_SUPPORT_IRNESTING_H
#define TBC_SUPPORT_IRNESTING_H

#include <string>
#include <string_view>

namespace tbc {

/// "" when no bracket ({, (, [, <) in `text` nests deeper than `limit`
/// outside string literals and comments; else "line N: ..." naming where the
/// limit was crossed. The count errs high (an arrow's '>' closes nothing),
/// never low.
std::string checkIRNesting(std::string_view text, int limit);

} // namespace tbc

#endif // TBC_SUPPORT_IRNESTING_H
