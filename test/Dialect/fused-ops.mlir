// RUN: tbc-opt %s | FileCheck %s
// RUN: tbc-opt %s | tbc-opt | FileCheck %s
// RUN: tbc-opt %s --mlir-print-op-generic | tbc-opt | FileCheck %s

// Round trip of the fused ops and the bind-time weight transforms.

// CHECK-LABEL: func.func @fused_linear
func.func @fused_linear(%x: tensor<?x?x32xf32>, %w: tensor<128x32xf32>, %b: tensor<128xf32>, %c: tensor<128xf32>, %wt: tensor<32x64xf32>)
    -> (tensor<?x?x128xf32>, tensor<?x?x64xf32>, tensor<?x?x128xf32>, tensor<?x?x64xf32>) {
  // CHECK: tbc.fused_linear %{{.*}}, %{{.*}} : (tensor<?x?x32xf32>, tensor<128x32xf32>) -> tensor<?x?x128xf32>
  %0 = tbc.fused_linear %x, %w : (tensor<?x?x32xf32>, tensor<128x32xf32>) -> tensor<?x?x128xf32>
  // CHECK: tbc.fused_linear %{{.*}}, %{{.*}} bias(%{{.*}}) norm = rms eps = 1.000000e-05 act = silu glu : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<128xf32>) -> tensor<?x?x64xf32>
  %1 = tbc.fused_linear %x, %w bias(%b) norm = rms eps = 1.0e-5 act = silu glu : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<128xf32>) -> tensor<?x?x64xf32>
  // CHECK: tbc.fused_linear %{{.*}}, %{{.*}} mean_correction(%{{.*}}) norm = layer eps = 1.000000e-05 act = gelu softcap = 3.000000e+01
  %2 = tbc.fused_linear %x, %w mean_correction(%c) norm = layer eps = 1.0e-5 act = gelu softcap = 30.0 : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<128xf32>) -> tensor<?x?x128xf32>
  // CHECK: tbc.fused_linear %{{.*}}, %{{.*}} norm = rms eps = 1.000000e-05 scale = 6.250000e-02 softcap = 3.000000e+01 : (tensor<?x?x32xf32>, tensor<128x32xf32>) -> tensor<?x?x128xf32>
  %4 = tbc.fused_linear %x, %w norm = rms eps = 1.0e-5 scale = 0.0625 softcap = 30.0 : (tensor<?x?x32xf32>, tensor<128x32xf32>) -> tensor<?x?x128xf32>
  // CHECK: tbc.fused_linear %{{.*}}, %{{.*}} weight_in_out : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  %3 = tbc.fused_linear %x, %wt weight_in_out : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %0, %1, %2, %3 : tensor<?x?x128xf32>, tensor<?x?x64xf32>, tensor<?x?x128xf32>, tensor<?x?x64xf32>
}

// A residual add as the epilogue's last step.
// CHECK-LABEL: func.func @fused_linear_residual
func.func @fused_linear_residual(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>, %h: tensor<?x?x64xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  // CHECK: tbc.fused_linear %{{.*}}, %{{.*}} residual(%{{.*}}) : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %0 = tbc.fused_linear %x, %w residual(%h) : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  // CHECK: tbc.fused_linear %{{.*}}, %{{.*}} bias(%{{.*}}) residual(%{{.*}}) act = gelu : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %1 = tbc.fused_linear %x, %w bias(%b) residual(%h) act = gelu : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %0, %1 : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// RoPE epilogue: the leading 96 columns (q, k) rotated; longrope's factors
// and the lengths operand round-trip.
// CHECK-LABEL: func.func @fused_linear_rope
func.func @fused_linear_rope(%x: tensor<?x?x32xf32>, %w: tensor<128x32xf32>, %pos: tensor<?x?xi32>, %len: tensor<?x?xi32>)
    -> (tensor<?x?x128xf32>, tensor<?x?x128xf32>) {
  // CHECK: tbc.fused_linear %{{.*}}, %{{.*}} positions(%{{.*}}) norm = rms eps = 1.000000e-05 rope = <style = neox, columns = 96, head_dim = 32, rotary_dim = 32, theta = 5.000000e+05> : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<?x?xi32>) -> tensor<?x?x128xf32>
  %0 = tbc.fused_linear %x, %w positions(%pos) norm = rms eps = 1.0e-5 rope = <style = neox, columns = 96, head_dim = 32, rotary_dim = 32, theta = 500000.0> : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<?x?xi32>) -> tensor<?x?x128xf32>
  // CHECK: tbc.fused_linear %{{.*}}, %{{.*}} positions(%{{.*}}) lengths(%{{.*}}) rope = <style = gptj, columns = 64, head_dim = 32, rotary_dim = 4, theta = 1.000000e+04, scaling = <kind = longrope, factor = 4.000000e+00, original_max_position = 16, attention_factor = 1.100000e+00, short_factor = [1.000000e+00, 1.500000e+00], long_factor = [2.000000e+00, 0.33333333333333331]>> : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<?x?xi32>, tensor<?x?xi32>) -> tensor<?x?x128xf32>
  %1 = tbc.fused_linear %x, %w positions(%pos) lengths(%len) rope = <style = gptj, columns = 64, head_dim = 32, rotary_dim = 4, theta = 10000.0, scaling = <kind = longrope, factor = 4.0, original_max_position = 16, attention_factor = 1.1, short_factor = [1.0, 1.5], long_factor = [2.0, 0.33333333333333331]>> : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<?x?xi32>, tensor<?x?xi32>) -> tensor<?x?x128xf32>
  return %0, %1 : tensor<?x?x128xf32>, tensor<?x?x128xf32>
}

// CHECK-LABEL: func.func @add_norm
func.func @add_norm(%a: tensor<?x?x32xf32>, %b: tensor<?x?x32xf32>, %w: tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = tbc.add_norm rms %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 gain_offset = 1.000000e+00 : tensor<?x?x32xf32>, tensor<32xf32>
  %s, %n = tbc.add_norm rms %a, %b, %w eps = 1.0e-5 gain_offset = 1.0 : tensor<?x?x32xf32>, tensor<32xf32>
  // CHECK: tbc.add_norm layer %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  %s2, %n2 = tbc.add_norm layer %a, %b, %w, %w eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %s, %n, %n2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// CHECK-LABEL: func.func @norm_add
func.func @norm_add(%x: tensor<?x?x32xf32>, %r: tensor<?x?x32xf32>, %w: tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  // CHECK: tbc.norm_add rms %{{.*}}, %{{.*}} residual(%{{.*}}) eps = 1.000000e-05 gain_offset = 1.000000e+00 : tensor<?x?x32xf32>, tensor<32xf32>
  %h = tbc.norm_add rms %x, %w residual(%r) eps = 1.0e-5 gain_offset = 1.0 : tensor<?x?x32xf32>, tensor<32xf32>
  // CHECK: tbc.norm_add layer %{{.*}}, %{{.*}}, %{{.*}} residual(%{{.*}}) eps = 1.000000e-05 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  %h2 = tbc.norm_add layer %x, %w, %w residual(%r) eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  // A LayerNorm with a gain offset (Nemotron's LayerNorm1P post-norm).
  // CHECK: tbc.norm_add layer %{{.*}}, %{{.*}}, %{{.*}} residual(%{{.*}}) eps = 1.000000e-05 gain_offset = 1.000000e+00 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  %h3 = tbc.norm_add layer %x, %w, %w residual(%r) eps = 1.0e-5 gain_offset = 1.0 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %h, %h2, %h3 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// CHECK-LABEL: func.func @transforms
func.func @transforms(%a: tensor<8x4xf32>, %b: tensor<4x4xf32>, %g: tensor<4xf32>, %bias: tensor<12xf32>, %t: tensor<4x8xf32>)
    -> (tensor<12x4xf32>, tensor<12xf32>, tensor<12xf32>, tensor<4x8xf32>) {
  // CHECK: tbc.concat %{{.*}}, %{{.*}} dim = 0 : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<12x4xf32>
  %c = tbc.concat %a, %b dim = 0 : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<12x4xf32>
  // CHECK: tbc.fold_gain %{{.*}}, %{{.*}} offset = 1.000000e+00 : tensor<12x4xf32>, tensor<4xf32>
  %f = tbc.fold_gain %c, %g offset = 1.0 : tensor<12x4xf32>, tensor<4xf32>
  // CHECK: tbc.weight_row_sums %{{.*}} : tensor<12x4xf32> -> tensor<12xf32>
  %r = tbc.weight_row_sums %f : tensor<12x4xf32> -> tensor<12xf32>
  // CHECK: tbc.fold_bias %{{.*}}, %{{.*}}, %{{.*}} : tensor<12x4xf32>, tensor<4xf32>, tensor<12xf32> -> tensor<12xf32>
  %fb = tbc.fold_bias %c, %g, %bias : tensor<12x4xf32>, tensor<4xf32>, tensor<12xf32> -> tensor<12xf32>
  // CHECK: tbc.fold_gain %{{.*}}, %{{.*}} weight_in_out : tensor<4x8xf32>, tensor<4xf32>
  %ft = tbc.fold_gain %t, %g weight_in_out : tensor<4x8xf32>, tensor<4xf32>
  return %f, %r, %fb, %ft : tensor<12x4xf32>, tensor<12xf32>, tensor<12xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @fill_and_row_slice
func.func @fill_and_row_slice(%t: tensor<10x4xf32>) -> (tensor<4xf32>, tensor<8x4xf32>) {
  // CHECK: tbc.fill 1.000000e+00 : tensor<4xf32>
  %ones = tbc.fill 1.0 : tensor<4xf32>
  // CHECK: tbc.row_slice %{{.*}} start = 2 : tensor<10x4xf32> -> tensor<8x4xf32>
  %rows = tbc.row_slice %t start = 2 : tensor<10x4xf32> -> tensor<8x4xf32>
  return %ones, %rows : tensor<4xf32>, tensor<8x4xf32>
}

// CHECK-LABEL: func.func @swap_halves
func.func @swap_halves(%w: tensor<8x4xf32>, %b: tensor<8xf32>) -> (tensor<8x4xf32>, tensor<8xf32>) {
  // CHECK: tbc.swap_halves %{{.*}} block = 4 : tensor<8x4xf32>
  %sw = tbc.swap_halves %w block = 4 : tensor<8x4xf32>
  // CHECK: tbc.swap_halves %{{.*}} block = 8 : tensor<8xf32>
  %sb = tbc.swap_halves %b block = 8 : tensor<8xf32>
  return %sw, %sb : tensor<8x4xf32>, tensor<8xf32>
}
