//===- tbc-opt.cpp - mlir-opt with the tbc dialect and passes -------------===//

#include "tbc/InitAll.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tbc::registerAllDialects(registry);
  tbc::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tbc optimizer driver\n", registry));
}
