// RUN: tbc-opt %s -split-input-file --tbc-fuse-norm-projection | FileCheck %s

// RMSNorm feeding one projection: the gain folds into the weight at bind time.
// CHECK-LABEL: func.func @rms
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x32xf32>, %[[G:.*]]: tensor<32xf32>, %[[W:.*]]: tensor<48x32xf32>)
// CHECK: %[[F:.*]] = tbc.fold_gain %[[W]], %[[G]] : tensor<48x32xf32>, tensor<32xf32>
// CHECK: %[[Y:.*]] = tbc.fused_linear %[[X]], %[[F]] norm = rms eps = 1.000000e-05 : (tensor<?x?x32xf32>, tensor<48x32xf32>) -> tensor<?x?x48xf32>
// CHECK-NOT: tbc.rms_norm
// CHECK: return %[[Y]]
func.func @rms(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %w: tensor<48x32xf32>) -> tensor<?x?x48xf32> {
  %n = tbc.rms_norm %x, %g eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>
  %y = tbc.linear %n, %w : tensor<?x?x32xf32>, tensor<48x32xf32> -> tensor<?x?x48xf32>
  return %y : tensor<?x?x48xf32>
}

// -----

// Several projections of one norm: each gets its own folded weight.
// Gemma's (1 + w) gain is folded with its offset.
// CHECK-LABEL: func.func @gemma_two_users
// CHECK: %[[F1:.*]] = tbc.fold_gain %{{.*}}, %{{.*}} offset = 1.000000e+00
// CHECK: tbc.fused_linear %{{.*}}, %[[F1]] norm = rms eps = 9.9999999999999995E-7
// CHECK: %[[F2:.*]] = tbc.fold_gain %{{.*}}, %{{.*}} offset = 1.000000e+00
// CHECK: tbc.fused_linear %{{.*}}, %[[F2]] norm = rms
func.func @gemma_two_users(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %a: tensor<48x32xf32>, %b: tensor<16x32xf32>) -> (tensor<?x?x48xf32>, tensor<?x?x16xf32>) {
  %n = tbc.rms_norm %x, %g eps = 1.0e-6 gain_offset = 1.0 : tensor<?x?x32xf32>, tensor<32xf32>
  %y = tbc.linear %n, %a : tensor<?x?x32xf32>, tensor<48x32xf32> -> tensor<?x?x48xf32>
  %z = tbc.linear %n, %b : tensor<?x?x32xf32>, tensor<16x32xf32> -> tensor<?x?x16xf32>
  return %y, %z : tensor<?x?x48xf32>, tensor<?x?x16xf32>
}

// -----

// Into a gated projection (norm -> gate/up -> glu as a single op).
// CHECK-LABEL: func.func @into_glu
// CHECK: %[[F:.*]] = tbc.fold_gain
// CHECK: tbc.fused_linear %{{.*}}, %[[F]] norm = rms eps = 1.000000e-05 act = silu glu : (tensor<?x?x32xf32>, tensor<128x32xf32>) -> tensor<?x?x64xf32>
func.func @into_glu(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %w: tensor<128x32xf32>) -> tensor<?x?x64xf32> {
  %n = tbc.rms_norm %x, %g eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>
  %y = tbc.fused_linear %n, %w act = silu glu : (tensor<?x?x32xf32>, tensor<128x32xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// LayerNorm with bias into a projection with bias: the mean term becomes a
// row-sum correction, the norm bias folds into the projection bias.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x32xf32>, %[[G:.*]]: tensor<32xf32>, %[[BETA:.*]]: tensor<32xf32>, %[[W:.*]]: tensor<48x32xf32>, %[[B:.*]]: tensor<48xf32>)
// CHECK: %[[F:.*]] = tbc.fold_gain %[[W]], %[[G]] : tensor<48x32xf32>, tensor<32xf32>
// CHECK: %[[C:.*]] = tbc.weight_row_sums %[[F]] : tensor<48x32xf32> -> tensor<48xf32>
// CHECK: %[[FB:.*]] = tbc.fold_bias %[[W]], %[[BETA]], %[[B]] : tensor<48x32xf32>, tensor<32xf32>, tensor<48xf32> -> tensor<48xf32>
// CHECK: tbc.fused_linear %[[X]], %[[F]] bias(%[[FB]]) mean_correction(%[[C]]) norm = layer eps = 1.000000e-05
func.func @layer_norm(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %beta: tensor<32xf32>, %w: tensor<48x32xf32>, %b: tensor<48xf32>) -> tensor<?x?x48xf32> {
  %n = tbc.layer_norm %x, %g, %beta eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  %y = tbc.linear %n, %w, %b : tensor<?x?x32xf32>, tensor<48x32xf32>, tensor<48xf32> -> tensor<?x?x48xf32>
  return %y : tensor<?x?x48xf32>
}

// -----

// GPT-2's [in, out] weights keep their layout through the transforms.
// CHECK-LABEL: func.func @layer_norm_in_out
// CHECK: tbc.fold_gain %{{.*}}, %{{.*}} weight_in_out : tensor<32x48xf32>, tensor<32xf32>
// CHECK: tbc.weight_row_sums %{{.*}} weight_in_out : tensor<32x48xf32> -> tensor<48xf32>
// CHECK: tbc.fold_bias %{{.*}}, %{{.*}}, %{{.*}} weight_in_out
// CHECK: tbc.fused_linear {{.*}} norm = layer eps = 1.000000e-05 act = gelu_tanh weight_in_out
func.func @layer_norm_in_out(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %beta: tensor<32xf32>, %w: tensor<32x48xf32>, %b: tensor<48xf32>) -> tensor<?x?x48xf32> {
  %n = tbc.layer_norm %x, %g, %beta eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  %y = tbc.fused_linear %n, %w bias(%b) act = gelu_tanh weight_in_out : (tensor<?x?x32xf32>, tensor<32x48xf32>, tensor<48xf32>) -> tensor<?x?x48xf32>
  return %y : tensor<?x?x48xf32>
}

// -----

// Negative: the normalised tensor is also a residual (post-norm), so it is
// written anyway; the projection keeps reading it.
// CHECK-LABEL: func.func @extra_user
// CHECK: tbc.rms_norm
// CHECK: tbc.linear
// CHECK-NOT: tbc.fused_linear
func.func @extra_user(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %w: tensor<32x32xf32>) -> tensor<?x?x32xf32> {
  %n = tbc.rms_norm %x, %g eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>
  %y = tbc.linear %n, %w : tensor<?x?x32xf32>, tensor<32x32xf32> -> tensor<?x?x32xf32>
  %r = tbc.add %n, %y : tensor<?x?x32xf32>
  return %r : tensor<?x?x32xf32>
}

// -----

// A tied LM head shares the embedding table: folding the gain would copy
// it, so the gain scales the activation instead (gain(...)).
// CHECK-LABEL: func.func @tied_head
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>
// CHECK: %[[TABLE:.*]] = tbc.param "model.embed_tokens.weight"
// CHECK: %[[G:.*]] = tbc.param "model.norm.weight"
// CHECK-NOT: tbc.fold_gain
// CHECK-NOT: tbc.rms_norm
// CHECK: tbc.fused_linear %[[X]], %[[TABLE]] gain(%[[G]]) norm = rms eps = 1.000000e-05 :
func.func @tied_head(%ids: tensor<?x?xi32>, %x: tensor<?x?x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x100xf32>) {
  %table = tbc.param "model.embed_tokens.weight" : tensor<100x32xf32>
  %g = tbc.param "model.norm.weight" : tensor<32xf32>
  %e = tbc.embedding %table[%ids] : tensor<100x32xf32>, tensor<?x?xi32>
  %n = tbc.rms_norm %x, %g eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>
  %l = tbc.linear %n, %table : tensor<?x?x32xf32>, tensor<100x32xf32> -> tensor<?x?x100xf32>
  return %e, %l : tensor<?x?x32xf32>, tensor<?x?x100xf32>
}

// -----

// A tied head under a LayerNorm with bias (GPT-2, BLOOM): the mean
// correction is W g and the bias W beta, both bind-time vectors; the table
// itself is read as it is.
// CHECK-LABEL: func.func @tied_head_layer_norm
// CHECK: %[[TABLE:.*]] = tbc.param "transformer.wte.weight"
// CHECK: %[[G:.*]] = tbc.param "transformer.ln_f.weight"
// CHECK: %[[B:.*]] = tbc.param "transformer.ln_f.bias"
// CHECK-DAG: %[[C:.*]] = tbc.fold_bias %[[TABLE]], %[[G]] : tensor<100x32xf32>, tensor<32xf32> -> tensor<100xf32>
// CHECK-DAG: %[[BIAS:.*]] = tbc.fold_bias %[[TABLE]], %[[B]] : tensor<100x32xf32>, tensor<32xf32> -> tensor<100xf32>
// CHECK: tbc.fused_linear %{{.*}}, %[[TABLE]] bias(%[[BIAS]]) mean_correction(%[[C]]) gain(%[[G]]) norm = layer
func.func @tied_head_layer_norm(%ids: tensor<?x?xi32>, %x: tensor<?x?x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x100xf32>) {
  %table = tbc.param "transformer.wte.weight" : tensor<100x32xf32>
  %g = tbc.param "transformer.ln_f.weight" : tensor<32xf32>
  %beta = tbc.param "transformer.ln_f.bias" : tensor<32xf32>
  %e = tbc.embedding %table[%ids] : tensor<100x32xf32>, tensor<?x?xi32>
  %n = tbc.layer_norm %x, %g, %beta eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  %l = tbc.linear %n, %table : tensor<?x?x32xf32>, tensor<100x32xf32> -> tensor<?x?x100xf32>
  return %e, %l : tensor<?x?x32xf32>, tensor<?x?x100xf32>
}

// -----

// Negative: per-head QK-norm feeds RoPE, not a projection.
// CHECK-LABEL: func.func @grouped
// CHECK: tbc.rms_norm {{.*}} groups = 4
// CHECK-NOT: tbc.fused_linear
func.func @grouped(%x: tensor<?x?x32xf32>, %g: tensor<8xf32>, %w: tensor<32x32xf32>) -> tensor<?x?x32xf32> {
  %n = tbc.rms_norm %x, %g eps = 1.0e-5 groups = 4 : tensor<?x?x32xf32>, tensor<8xf32>
  %y = tbc.linear %n, %w : tensor<?x?x32xf32>, tensor<32x32xf32> -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// Negative: a projection that already has a norm prologue is not stacked.
// CHECK-LABEL: func.func @already_normed
// CHECK: tbc.rms_norm
func.func @already_normed(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %w: tensor<32x32xf32>) -> tensor<?x?x32xf32> {
  %n = tbc.rms_norm %x, %g eps = 1.0e-5 : tensor<?x?x32xf32>, tensor<32xf32>
  %y = tbc.fused_linear %n, %w norm = rms eps = 1.0e-5 : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}
