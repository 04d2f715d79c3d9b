// RUN: tbc-opt %s -split-input-file --tbc-fuse-residual-projection | FileCheck %s

// A pre-norm block's two residual adds: each joins the projection that
// produces its right-hand side.
// CHECK-LABEL: func.func @block
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x32xf32>, %[[A:[^:]*]]: tensor<?x?x32xf32>, %[[WO:[^:]*]]: tensor<32x32xf32>, %[[H:[^:]*]]: tensor<?x?x64xf32>, %[[WD:[^:]*]]: tensor<32x64xf32>, %[[B:[^:]*]]: tensor<32xf32>)
// CHECK: %[[S:.*]] = tbc.fused_linear %[[A]], %[[WO]] residual(%[[X]]) : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
// CHECK: %[[T:.*]] = tbc.fused_linear %[[H]], %[[WD]] bias(%[[B]]) residual(%[[S]]) : (tensor<?x?x64xf32>, tensor<32x64xf32>, tensor<32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
// CHECK-NOT: tbc.add
// CHECK: return %[[T]]
func.func @block(%x: tensor<?x?x32xf32>, %a: tensor<?x?x32xf32>, %wo: tensor<32x32xf32>, %h: tensor<?x?x64xf32>, %wd: tensor<32x64xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %o = tbc.linear %a, %wo : tensor<?x?x32xf32>, tensor<32x32xf32> -> tensor<?x?x32xf32>
  %s = tbc.add %x, %o : tensor<?x?x32xf32>
  %d = tbc.linear %h, %wd, %b : tensor<?x?x64xf32>, tensor<32x64xf32>, tensor<32xf32> -> tensor<?x?x32xf32>
  %t = tbc.add %d, %s : tensor<?x?x32xf32>
  return %t : tensor<?x?x32xf32>
}

// -----

// A fused projection keeps its epilogue; the residual is added last. The
// projection's operands may be defined after the residual and vice versa:
// the fused op takes the add's place.
// CHECK-LABEL: func.func @fused
// CHECK: %[[R:.*]] = tbc.activation
// CHECK: tbc.fused_linear %{{.*}}, %{{.*}} residual(%[[R]]) norm = rms eps = 1.000000e-05 act = silu glu
func.func @fused(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>) -> tensor<?x?x32xf32> {
  %f = tbc.fused_linear %x, %w norm = rms eps = 1.0e-5 act = silu glu : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x32xf32>
  %r = tbc.activation silu %x : tensor<?x?x32xf32>
  %s = tbc.add %f, %r : tensor<?x?x32xf32>
  return %s : tensor<?x?x32xf32>
}

// -----

// GPT-2's [in, out] weight stays marked as such.
// CHECK-LABEL: func.func @weight_in_out
// CHECK: tbc.fused_linear %{{.*}}, %{{.*}} residual(%{{.*}}) weight_in_out
func.func @weight_in_out(%x: tensor<?x?x32xf32>, %a: tensor<?x?x64xf32>, %w: tensor<64x32xf32>) -> tensor<?x?x32xf32> {
  %o = tbc.linear %a, %w weight_in_out : tensor<?x?x64xf32>, tensor<64x32xf32> -> tensor<?x?x32xf32>
  %s = tbc.add %x, %o : tensor<?x?x32xf32>
  return %s : tensor<?x?x32xf32>
}

// -----

// Negative: the projection's output is needed besides the sum.
// CHECK-LABEL: func.func @escapes
// CHECK: tbc.linear
// CHECK: tbc.add
func.func @escapes(%x: tensor<?x?x32xf32>, %a: tensor<?x?x32xf32>, %w: tensor<32x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %o = tbc.linear %a, %w : tensor<?x?x32xf32>, tensor<32x32xf32> -> tensor<?x?x32xf32>
  %s = tbc.add %x, %o : tensor<?x?x32xf32>
  return %s, %o : tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Negative: a RoPE epilogue excludes a residual; neither operand of this
// add is a projection's only use, so it stays.
// CHECK-LABEL: func.func @rope
// CHECK: tbc.fused_linear %{{.*}}, %{{.*}} positions(%{{.*}}) rope
// CHECK-NEXT: tbc.add
func.func @rope(%x: tensor<?x?x32xf32>, %w: tensor<32x32xf32>, %p: tensor<?x?xi32>) -> tensor<?x?x32xf32> {
  %q = tbc.fused_linear %x, %w positions(%p) rope = <style = neox, columns = 32, head_dim = 16, rotary_dim = 16, theta = 10000.0> : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<?x?xi32>) -> tensor<?x?x32xf32>
  %s = tbc.add %x, %q : tensor<?x?x32xf32>
  return %s : tensor<?x?x32xf32>
}

// -----

// Negative: a tapped projection keeps its output (tbc verify compares it).
// CHECK-LABEL: func.func @tapped
// CHECK: tbc.linear {{.*}}tbc.tap = "self_attn.o_proj"
// CHECK: tbc.add
func.func @tapped(%x: tensor<?x?x32xf32>, %a: tensor<?x?x32xf32>, %w: tensor<32x32xf32>) -> tensor<?x?x32xf32> {
  %o = tbc.linear %a, %w {tbc.tap = "self_attn.o_proj"} : tensor<?x?x32xf32>, tensor<32x32xf32> -> tensor<?x?x32xf32>
  %s = tbc.add %x, %o : tensor<?x?x32xf32>
  return %s : tensor<?x?x32xf32>
}

// -----

// Negative: two adds of one projection's output; neither fuses.
// CHECK-LABEL: func.func @two_adds
// CHECK: tbc.linear
// CHECK-COUNT-2: tbc.add
func.func @two_adds(%x: tensor<?x?x32xf32>, %y: tensor<?x?x32xf32>, %a: tensor<?x?x32xf32>, %w: tensor<32x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %o = tbc.linear %a, %w : tensor<?x?x32xf32>, tensor<32x32xf32> -> tensor<?x?x32xf32>
  %s = tbc.add %x, %o : tensor<?x?x32xf32>
  %t = tbc.add %y, %o : tensor<?x?x32xf32>
  return %s, %t : tensor<?x?x32xf32>, tensor<?x?x32xf32>
}
