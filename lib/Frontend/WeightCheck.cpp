//===- WeightCheck.cpp - IR parameters against a checkpoint ---------------===//

#include "tbc/Frontend/WeightCheck.h"

#include "tbc/Dialect/TbcDialect.h"

#include <set>

using namespace mlir;

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string tbc::checkWeights(ModuleOp module, const rt::WeightStore &weights,
                              size_t maxProblems) {
  std::string problems;
  size_t count = 0;
  std::set<std::string> seen;
  module.walk([&](ParamOp param) {
    std::string name = param.getName().str();
    if (!seen.insert(name).second || count >= maxProblems)
      return;
    ArrayRef<int64_t> want = param.getType().getShape();
    const rt::TensorView *t = weights.resolve(name);
    std::string problem;
    if (!t)
      problem = "tensor '" + name + "' is missing from the checkpoint";
    else if (!rt::isFloatDType(t->dtype))
      problem = t->file + ": tensor '" + name + "' has dtype " +
                rt::dtypeName(t->dtype) + "; expected F32, F16 or BF16";
    else if (ArrayRef<int64_t>(t->shape) != want)
      problem = t->file + ": tensor '" + name + "' has shape " +
                shapeStr(t->shape) + "; the model needs " + shapeStr(want);
    if (!problem.empty()) {
      problems += (problems.empty() ? "" : "\n") + problem;
      ++count;
    }
  });
  return problems;
}
