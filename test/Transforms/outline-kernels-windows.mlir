// RUN: tbc-opt %s --tbc-outline-kernels -split-input-file | FileCheck %s

// Attention alike but for its window (Gemma's local and global layers)
// shares one kernel that takes the window as a value; each call passes its
// own (0: no window).
// CHECK-LABEL: func.func @local
// CHECK: %[[W:.*]] = arith.constant 4096 : i64
// CHECK: call @[[ATT:k[0-9]+_attention]](%arg0, %arg1, %arg1, %[[W]])
// CHECK-LABEL: func.func @global
// CHECK: %[[NONE:.*]] = arith.constant 0 : i64
// CHECK: call @[[ATT]](%arg0, %arg1, %arg1, %[[NONE]])
// CHECK: func.func private @[[ATT]]({{.*}}, %[[ARG:.*]]: i64) -> tensor<?x?x64xf32> attributes {tbc.kernel, tbc.kv_cache}
// CHECK-NEXT: tbc.attention {{.*}} window(%[[ARG]]) heads = 4
// CHECK-NOT: window =
// CHECK-NOT: func.func private
func.func @local(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  %a = tbc.attention %q, %kv, %kv heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 causal window = 4096 softcap = 50.0 : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  return %a : tensor<?x?x64xf32>
}
func.func @global(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  %a = tbc.attention %q, %kv, %kv heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 causal softcap = 50.0 : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  return %a : tensor<?x?x64xf32>
}

// -----

// Where every layer has the same window (Mistral) it stays an attribute:
// the kernels fold it into their bounds.
// CHECK-LABEL: func.func @a
// CHECK-NOT: arith.constant
// CHECK: call @[[ATT:k[0-9]+_attention]](%arg0, %arg1, %arg1) :
// CHECK-LABEL: func.func @b
// CHECK: call @[[ATT]](%arg0, %arg1, %arg1) :
// CHECK: func.func private @[[ATT]]
// CHECK-NEXT: tbc.attention {{.*}} causal window = 4096 :
func.func @a(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  %a = tbc.attention %q, %kv, %kv heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 causal window = 4096 : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  return %a : tensor<?x?x64xf32>
}
func.func @b(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  %a = tbc.attention %q, %kv, %kv heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 causal window = 4096 : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  return %a : tensor<?x?x64xf32>
}

// -----

// Attention that differs in more than its window keeps its own kernels,
// each with its static window.
// CHECK-LABEL: func.func @capped
// CHECK-NOT: arith.constant
// CHECK: call @[[CAPPED:k[0-9]+_attention]](%arg0, %arg1, %arg1) :
// CHECK-LABEL: func.func @plain
// CHECK: call @[[PLAIN:k[0-9]+_attention]](%arg0, %arg1, %arg1) :
// CHECK: func.func private @[[CAPPED]]
// CHECK-NEXT: tbc.attention {{.*}} causal window = 4096 softcap
// CHECK: func.func private @[[PLAIN]]
// CHECK-NEXT: tbc.attention {{.*}} causal :
func.func @capped(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  %a = tbc.attention %q, %kv, %kv heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 causal window = 4096 softcap = 50.0 : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  return %a : tensor<?x?x64xf32>
}
func.func @plain(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  %a = tbc.attention %q, %kv, %kv heads = 4 kv_heads = 2 head_dim = 16 scale = 0.25 causal : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  return %a : tensor<?x?x64xf32>
}
