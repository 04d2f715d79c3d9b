// RUN: tbc-opt %s --tbc-outline-kernels | FileCheck %s

// Every compute op becomes a call to a kernel; ops that compute the same
// thing (same op, attributes and types) share one; parameters and
// last-dimension splits stay in the schedule.
// CHECK-LABEL: func.func @forward
// CHECK: %[[G1:.*]] = tbc.param "a.weight"
// CHECK: %[[G2:.*]] = tbc.param "b.weight"
// CHECK: %[[N1:.*]] = call @[[NORM:k[0-9]+_rms_norm]](%arg0, %[[G1]])
// CHECK: %[[N2:.*]] = call @[[NORM]](%[[N1]], %[[G2]])
// CHECK: %[[N3:.*]] = call @[[NORM2:k[0-9]+_rms_norm]](%[[N2]], %[[G2]])
// CHECK: %[[P:.*]] = call @[[LIN:k[0-9]+_linear]](%[[N3]],
// CHECK: %[[S:.*]]:3 = tbc.split %[[P]]
// CHECK: call @[[ATT:k[0-9]+_attention]](%[[S]]#0, %[[S]]#1, %[[S]]#2)
// CHECK: func.func private @[[NORM]]({{.*}}) -> tensor<?x?x64xf32> attributes {tbc.kernel}
// CHECK-NEXT: tbc.rms_norm {{.*}} eps = 9.9999999999999995E-7
// CHECK: func.func private @[[NORM2]]({{.*}}) -> tensor<?x?x64xf32> attributes {tbc.kernel}
// CHECK-NEXT: tbc.rms_norm {{.*}} eps = 1.000000e-05
// Projections may split their output columns across cores; attention its
// key/value heads, and it keeps a KV cache per call site.
// CHECK: func.func private @[[LIN]]({{.*}}) -> tensor<?x?x96xf32> attributes {tbc.kernel}
// CHECK: func.func private @[[ATT]]({{.*}}) -> tensor<?x?x64xf32> attributes {tbc.kernel, tbc.kv_cache}
func.func @forward(%x: tensor<?x?x64xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x64xf32> {
  %g1 = tbc.param "a.weight" : tensor<64xf32>
  %g2 = tbc.param "b.weight" : tensor<64xf32>
  %w = tbc.param "w.weight" : tensor<96x64xf32>
  %n1 = tbc.rms_norm %x, %g1 eps = 1.0e-6 : tensor<?x?x64xf32>, tensor<64xf32>
  %n2 = tbc.rms_norm %n1, %g2 eps = 1.0e-6 : tensor<?x?x64xf32>, tensor<64xf32>
  %n3 = tbc.rms_norm %n2, %g2 eps = 1.0e-5 : tensor<?x?x64xf32>, tensor<64xf32>
  %p = tbc.linear %n3, %w : tensor<?x?x64xf32>, tensor<96x64xf32> -> tensor<?x?x96xf32>
  %q, %k, %v = tbc.split %p : tensor<?x?x96xf32> -> tensor<?x?x64xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
  %a = tbc.attention %q, %k, %v heads = 4 kv_heads = 1 head_dim = 16 scale = 0.25 causal : tensor<?x?x64xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
  return %a : tensor<?x?x64xf32>
}
