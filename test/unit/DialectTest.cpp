//===- DialectTest.cpp - building tbc ops from C++ ------------------------===//
//
// The frontend builds tbc IR through these builders; result types must be
// inferred without the caller spelling them out.
//
//===----------------------------------------------------------------------===//

#include "tbc/Dialect/TbcDialect.h"
#include "tbc/InitAll.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {
struct DialectTest : ::testing::Test {
  DialectTest() {
    DialectRegistry registry;
    tbc::registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }
  MLIRContext ctx;
};
} // namespace

TEST_F(DialectTest, LinearInfersOutputFeaturesForBothLayouts) {
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  Type f32 = b.getF32Type();
  auto x = tbc::ParamOp::create(b, loc, RankedTensorType::get({2, 5, 64}, f32),
                                "x");
  auto wOutIn = tbc::ParamOp::create(
      b, loc, RankedTensorType::get({96, 64}, f32), "w_out_in");
  auto wInOut = tbc::ParamOp::create(
      b, loc, RankedTensorType::get({64, 96}, f32), "w_in_out");
  auto y1 = tbc::LinearOp::create(b, loc, x, wOutIn, Value(), false);
  auto y2 = tbc::LinearOp::create(b, loc, x, wInOut, Value(), true);
  EXPECT_EQ(y1.getType(), RankedTensorType::get({2, 5, 96}, f32));
  EXPECT_EQ(y2.getType(), RankedTensorType::get({2, 5, 96}, f32));
  EXPECT_EQ(y2.getInFeatures(), 64);
  EXPECT_EQ(y2.getOutFeatures(), 96);
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(DialectTest, EmbeddingAppendsHiddenToIdShape) {
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  int64_t dyn = ShapedType::kDynamic;
  auto table = tbc::ParamOp::create(
      b, loc, RankedTensorType::get({1000, 32}, b.getBF16Type()), "emb");
  auto func = func::FuncOp::create(
      b, loc, "f",
      b.getFunctionType({RankedTensorType::get({dyn, dyn}, b.getI32Type())},
                        {}));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToEnd(body);
  auto e = tbc::EmbeddingOp::create(b, loc, table, body->getArgument(0),
                                    FloatAttr());
  EXPECT_EQ(e.getType(),
            RankedTensorType::get({dyn, dyn, 32}, b.getBF16Type()));
}

TEST_F(DialectTest, VerifierRejectsGqaWithIndivisibleHeads) {
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  Type f32 = b.getF32Type();
  auto q = tbc::ParamOp::create(b, loc, RankedTensorType::get({1, 4, 96}, f32), "q");
  auto kv = tbc::ParamOp::create(b, loc, RankedTensorType::get({1, 4, 64}, f32), "kv");
  tbc::AttentionOp::create(b, loc, q.getType(), q, kv, kv, Value(), Value(), 3, 2, 32,
                           llvm::APFloat(0.125), true, IntegerAttr(), FloatAttr(),
                           DenseF64ArrayAttr(), tbc::RelativeBucketsAttr());
  std::string diag;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    diag = d.str();
    return success();
  });
  EXPECT_TRUE(failed(verify(*module)));
  EXPECT_NE(diag.find("must be a multiple of kv_heads"), std::string::npos)
      << diag;
}
