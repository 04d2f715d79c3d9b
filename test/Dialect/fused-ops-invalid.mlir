// RUN: tbc-opt %s -split-input-file -verify-diagnostics

func.func @in_features(%x: tensor<?x16xf32>, %w: tensor<8x32xf32>) {
  // expected-error @+1 {{input must end in the weight's 32 input features}}
  %0 = tbc.fused_linear %x, %w : (tensor<?x16xf32>, tensor<8x32xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @norm_without_eps(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>) {
  // expected-error @+1 {{'norm' and 'eps' go together}}
  %0 = tbc.fused_linear %x, %w norm = rms : (tensor<?x32xf32>, tensor<8x32xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @negative_eps(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>) {
  // expected-error @+1 {{'eps' must be non-negative}}
  %0 = tbc.fused_linear %x, %w norm = rms eps = -1.0 : (tensor<?x32xf32>, tensor<8x32xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @layer_without_correction(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>) {
  // expected-error @+1 {{a LayerNorm prologue needs a mean_correction operand, and only it}}
  %0 = tbc.fused_linear %x, %w norm = layer eps = 1.0e-5 : (tensor<?x32xf32>, tensor<8x32xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @glu_without_act(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>) {
  // expected-error @+1 {{'glu' needs an 'act'}}
  %0 = tbc.fused_linear %x, %w glu : (tensor<?x32xf32>, tensor<8x32xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @glu_odd_rows(%x: tensor<?x32xf32>, %w: tensor<9x32xf32>) {
  // expected-error @+1 {{a GLU epilogue needs an even number of weight rows (gate then up), got 9}}
  %0 = tbc.fused_linear %x, %w act = silu glu : (tensor<?x32xf32>, tensor<9x32xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @glu_result(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>) {
  // expected-error @+1 {{result must end in 4 features}}
  %0 = tbc.fused_linear %x, %w act = silu glu : (tensor<?x32xf32>, tensor<8x32xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @softcap(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>) {
  // expected-error @+1 {{'softcap' must be positive}}
  %0 = tbc.fused_linear %x, %w softcap = 0.0 : (tensor<?x32xf32>, tensor<8x32xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @scale(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>) {
  // expected-error @+1 {{'scale' must be positive and finite}}
  %0 = tbc.fused_linear %x, %w scale = -2.0 : (tensor<?x32xf32>, tensor<8x32xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @bias_length(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{bias must be a vector of 8 elements}}
  %0 = tbc.fused_linear %x, %w bias(%b) : (tensor<?x32xf32>, tensor<8x32xf32>, tensor<4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @weight_rank(%x: tensor<?x32xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{weight must be rank 2}}
  %0 = tbc.fused_linear %x, %w : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @add_norm_weight(%a: tensor<?x32xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{weight must be a vector of 32 elements}}
  %s, %n = tbc.add_norm rms %a, %a, %w eps = 1.0e-5 : tensor<?x32xf32>, tensor<16xf32>
  return
}

// -----

func.func @add_norm_rms_bias(%a: tensor<?x32xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{only a LayerNorm takes a bias of the hidden size}}
  %s, %n = tbc.add_norm rms %a, %a, %w, %w eps = 1.0e-5 : tensor<?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return
}

// -----

func.func @add_norm_eps(%a: tensor<?x32xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{'eps' must be non-negative}}
  %s, %n = tbc.add_norm rms %a, %a, %w eps = -1.0 : tensor<?x32xf32>, tensor<32xf32>
  return
}

// -----

func.func @norm_add_weight(%a: tensor<?x32xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{weight must be a vector of 32 elements}}
  %h = tbc.norm_add rms %a, %w residual(%a) eps = 1.0e-5 : tensor<?x32xf32>, tensor<16xf32>
  return
}

// -----

func.func @norm_add_rms_bias(%a: tensor<?x32xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{only a LayerNorm takes a bias of the hidden size}}
  %h = tbc.norm_add rms %a, %w, %w residual(%a) eps = 1.0e-5 : tensor<?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return
}

// -----

func.func @norm_add_eps(%a: tensor<?x32xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{'eps' must be non-negative}}
  %h = tbc.norm_add rms %a, %w residual(%a) eps = -1.0 : tensor<?x32xf32>, tensor<32xf32>
  return
}

// -----

func.func @concat_shapes(%a: tensor<8x4xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{inputs differ outside dimension 0}}
  %c = tbc.concat %a, %b dim = 0 : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<12x4xf32>
  return
}

// -----

func.func @concat_result(%a: tensor<8x4xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+1 {{result must be 'tensor<12x4xf32>'}}
  %c = tbc.concat %a, %b dim = 0 : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<13x4xf32>
  return
}

// -----

func.func @concat_dim(%a: tensor<8x4xf32>) {
  // expected-error @+1 {{'dim' 2 is out of range}}
  %c = tbc.concat %a dim = 2 : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{needs at least one input}}
  %c = "tbc.concat"() {dim = 0 : i64} : () -> tensor<8x4xf32>
  return
}

// -----

func.func @concat_types(%a: tensor<8x4xf32>, %b: tensor<4x4xf16>) {
  // expected-error @+1 {{inputs must share rank and element type}}
  %c = tbc.concat %a, %b dim = 0 : (tensor<8x4xf32>, tensor<4x4xf16>) -> tensor<12x4xf32>
  return
}

// -----

func.func @fill_dynamic() {
  // expected-error @+1 {{needs a static shape: it is made at bind time}}
  %f = tbc.fill 1.0 : tensor<?xf32>
  return
}

// -----

func.func @row_slice_past_the_end(%t: tensor<10x4xf32>) {
  // expected-error @+1 {{rows [3, 11) are not within the input's 10}}
  %r = tbc.row_slice %t start = 3 : tensor<10x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @row_slice_columns(%t: tensor<10x4xf32>) {
  // expected-error @+1 {{result must keep the input's columns and element type}}
  %r = tbc.row_slice %t start = 0 : tensor<10x4xf32> -> tensor<8x2xf32>
  return
}

// -----

func.func @swap_halves_odd_block(%w: tensor<12x4xf32>) {
  // expected-error @+1 {{block 3 must be even and divide the input's 12 rows}}
  %r = tbc.swap_halves %w block = 3 : tensor<12x4xf32>
  return
}

// -----

func.func @swap_halves_ragged(%w: tensor<12x4xf32>) {
  // expected-error @+1 {{block 8 must be even and divide the input's 12 rows}}
  %r = tbc.swap_halves %w block = 8 : tensor<12x4xf32>
  return
}

// -----

func.func @swap_halves_rank(%w: tensor<2x4x4xf32>) {
  // expected-error @+1 {{swaps the rows of a static vector or matrix}}
  %r = tbc.swap_halves %w block = 2 : tensor<2x4x4xf32>
  return
}

// -----

func.func @fold_gain_length(%w: tensor<8x4xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{gain must be a vector of 4 elements}}
  %f = tbc.fold_gain %w, %g : tensor<8x4xf32>, tensor<8xf32>
  return
}

// -----

func.func @row_sums_length(%w: tensor<8x4xf32>) {
  // expected-error @+1 {{result must be a vector of 8 elements}}
  %r = tbc.weight_row_sums %w : tensor<8x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @fold_bias_beta(%w: tensor<8x4xf32>, %beta: tensor<8xf32>) {
  // expected-error @+1 {{beta must be a vector of 4 elements}}
  %r = tbc.fold_bias %w, %beta : tensor<8x4xf32>, tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @fold_bias_bias(%w: tensor<8x4xf32>, %beta: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{bias must be a vector of 8 elements}}
  %r = tbc.fold_bias %w, %beta, %b : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @fold_bias_rank(%w: tensor<8xf32>, %beta: tensor<4xf32>) {
  // expected-error @+1 {{weight must be rank 2}}
  %r = tbc.fold_bias %w, %beta : tensor<8xf32>, tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @fused_linear_residual_type(%x: tensor<?x?x32xf32>, %w: tensor<8x32xf32>, %h: tensor<?x?x16xf32>) {
  // expected-error @+1 {{'residual' must have the result's type 'tensor<?x?x8xf32>', got 'tensor<?x?x16xf32>'}}
  %0 = tbc.fused_linear %x, %w residual(%h) : (tensor<?x?x32xf32>, tensor<8x32xf32>, tensor<?x?x16xf32>) -> tensor<?x?x8xf32>
  return
}
