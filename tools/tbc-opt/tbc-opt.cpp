//===- tbc-opt.cpp - mlir-opt with the tbc dialect and passes -------------===//
//
// MlirOptMain with two guards of its own: the input is read as tbc reads
// every file (a regular file within a size budget, its bracket nesting
// bounded before the recursive parser sees it), and the output is written
// atomically only on success, so that a failed run leaves an existing -o
// file as it was (mlir-opt's ToolOutputFile truncates it first).
//
//===----------------------------------------------------------------------===//

#include "tbc/InitAll.h"
#include "tbc/Support/FileIO.h"
#include "tbc/Support/IRNesting.h"
#include "tbc/Support/Limits.h"

#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

static int fail(const std::string &message) {
  llvm::errs() << "tbc-opt: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tbc::registerAllDialects(registry);
  tbc::registerAllPasses();
  auto [inputPath, outputPath] = mlir::registerAndParseCLIOptions(
      argc, argv, "tbc optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();

  std::unique_ptr<llvm::MemoryBuffer> input;
  if (inputPath == "-") {
    std::string why;
    input = mlir::openInputFile(inputPath, &why);
    if (!input)
      return fail(why);
  } else {
    std::string text;
    if (std::string why = tbc::readRegularFile(inputPath,
                                               tbc::limits::kIRFileBytes, text);
        !why.empty())
      return fail(why);
    input = llvm::MemoryBuffer::getMemBufferCopy(text, inputPath);
  }
  if (std::string why = tbc::checkIRNesting(input->getBuffer(), tbc::limits::kIRNesting);
      !why.empty())
    return fail(inputPath + ": " + why);

  if (outputPath == "-")
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(llvm::outs(), std::move(input), registry, config));
  if (std::string why = tbc::checkOutputPath(outputPath, {inputPath}); !why.empty())
    return fail(why);
  std::string result;
  llvm::raw_string_ostream os(result);
  if (mlir::failed(mlir::MlirOptMain(os, std::move(input), registry, config)))
    return 1;
  if (std::string why = tbc::writeFileAtomically(outputPath, result); !why.empty())
    return fail(why);
  return 0;
}
