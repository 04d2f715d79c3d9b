// RUN: tbc-opt %s -split-input-file --tbc-outline-kernels --tbc-lower-to-cpu | FileCheck %s

// The CPU path's kernels: destination-passing functions on memrefs that the
// module's runtime calls through the C interface.

// A projection reads its weight packed in 32-column panels ([out, in] 96x64
// becomes 3 x 64 x 32) and takes the [begin, end) of its output columns
// last; 8-row x 32-column outer-product tiles (16 vector FMAs per k) add
// into the output: a panel inside the range with plain loads and stores, one
// across its edges through stores masked to the columns in range.
// CHECK-LABEL: func.func @k{{[0-9]+}}_linear(
// CHECK-SAME: memref<?x?x64xf32, strided<[?, ?, 1], offset: ?>>, %{{.*}}: memref<3x64x32xf32>, %{{.*}}: memref<?x?x96xf32>, %[[RANGE:.*]]: memref<2xi64>) attributes {llvm.emit_c_interface}
// CHECK: memref.load %[[RANGE]]
// CHECK: arith.minui
// CHECK-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// CHECK: %[[INSIDE:.*]] = arith.andi
// CHECK-NEXT: scf.if %[[INSIDE]] {
// CHECK-NOT: vector.masked
// CHECK: vector.load
// CHECK: vector.store
// CHECK: } else {
// CHECK: vector.maskedload
// CHECK: vector.maskedstore

// Attention takes its key/value caches and then the range of key/value
// heads to do. A chunk of 4 queries or more (a prompt) attends in register
// tiles (TiledAttention.cpp): the key/value head's keys packed transposed
// in blocks of 48 positions (three 16-wide vectors), then per tile of the
// four query heads scores vectorised over keys (12 accumulators, three
// loads of packed keys a step) and each row's softmax over the positions it
// sees, into the scores of a pass of 8 tiles (32 rows); then the pass's
// weighted sums of the values a block of 64 positions at a time, each
// tile's sums carried from block to block in a 32-row buffer (zeros where
// the block is the tile's first).
// CHECK-LABEL: func.func @k{{[0-9]+}}_attention(
// CHECK-SAME: %{{.*}}: memref<?x?x64xf32>, %[[KC:.*]]: memref<?x16xf32>, %[[VC:.*]]: memref<?x16xf32>, %{{.*}}: memref<2xi64>)
// CHECK: scf.if
// CHECK: %[[KP:.*]] = memref.alloc(%{{.*}}) : memref<?x16x48xf32>
// CHECK: %[[TS:.*]] = memref.alloc(%{{.*}}) : memref<32x?xf32>
// CHECK: %[[SUMS:.*]] = memref.alloc() : memref<32x16xf32>
// CHECK: %[[INVS:.*]] = memref.alloc() : memref<32xf32>
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK-COUNT-3: vector.load %[[KP]]
// CHECK-NOT: vector.load %[[KP]]
// CHECK-COUNT-12: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: vector.load %[[KP]]
// CHECK: scf.yield
// CHECK-COUNT-12: vector.store %{{.*}}, %[[TS]]
// CHECK: arith.maxnumf {{.*}} : vector<16xf32>
// CHECK: math.exp {{.*}} : vector<16xf32>
// CHECK: memref.store %{{.*}}, %[[INVS]]
// CHECK: scf.for {{.*}} step %c64 {
// CHECK-COUNT-4: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK: vector.load %[[VC]]
// CHECK-NOT: vector.load %[[VC]]
// CHECK-COUNT-4: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: vector.load %[[VC]]
// CHECK: scf.yield
// CHECK-COUNT-4: vector.store %{{.*}}, %[[SUMS]]
// CHECK: memref.load %[[INVS]]
// CHECK: vector.load %[[SUMS]]
// CHECK: memref.dealloc %[[INVS]]
// CHECK: memref.dealloc %[[SUMS]]
// CHECK: memref.dealloc %[[TS]]
// CHECK: memref.dealloc %[[KP]]
// Fewer queries (decoding) attend one row at a time: per row it scores
// only the positions it may see (causal: up to its own), with 16-wide dot
// products and value sums. The four query heads of the key/value head go
// together: each key row is loaded once for their four scores (a row of
// scores each), each value row once for their four sums.
// CHECK: } else {
// CHECK: %[[S:.*]] = memref.alloc(%{{.*}}) : memref<4x?xf32>
// CHECK: scf.for
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c4
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32) {
// CHECK: vector.load %[[KC]]
// CHECK-NOT: vector.load %[[KC]]
// CHECK-COUNT-4: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: vector.load %[[KC]]
// The four dot products' lanes are summed together: halves, two rounds of
// shuffles pairing the vectors' lanes, halves again.
// CHECK-NOT: vector.reduction
// CHECK-COUNT-4: arith.addf {{.*}} : vector<8xf32>
// CHECK: vector.shuffle %[[A:.*]], %[[B:.*]] [2, 3, 10, 11, 6, 7, 14, 15]
// CHECK-NEXT: vector.shuffle %[[A]], %[[B]] [0, 1, 8, 9, 4, 5, 12, 13]
// CHECK: vector.shuffle %[[AB:.*]], %[[CD:.*]] [1, 3, 9, 11, 5, 7, 13, 15]
// CHECK-NEXT: vector.shuffle %[[AB]], %[[CD]] [0, 2, 8, 10, 4, 6, 12, 14]
// CHECK: %[[SUMS:.*]] = arith.addf {{.*}} : vector<4xf32>
// CHECK-NEXT: vector.extract %[[SUMS]][0]
// CHECK-NOT: vector.load %[[KC]]
// CHECK: scf.yield
// CHECK-COUNT-4: math.exp {{.*}} : vector<16xf32>
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK: vector.load %[[VC]]
// CHECK-NOT: vector.load %[[VC]]
// CHECK-COUNT-4: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: vector.load %[[VC]]
// CHECK: scf.yield
// CHECK-COUNT-4: vector.store
// CHECK: memref.dealloc %[[S]]
func.func @forward(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %w = tbc.param "w.weight" : tensor<96x64xf32>
  %p = tbc.linear %x, %w : tensor<?x?x64xf32>, tensor<96x64xf32> -> tensor<?x?x96xf32>
  %q, %k, %v = tbc.split %p : tensor<?x?x96xf32> -> tensor<?x?x64xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
  %a = tbc.attention %q, %k, %v heads = 4 kv_heads = 1 head_dim = 16 scale = 0.25 causal : tensor<?x?x64xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
  return %a : tensor<?x?x64xf32>
}

// -----

// [in, out] weights (GPT-2's Conv1D) pack into the same panels: 64 x 40
// becomes 2 x 64 x 32 (the last panel zero-padded).
// CHECK-LABEL: func.func @k{{[0-9]+}}_linear(
// CHECK-SAME: %{{.*}}: memref<2x64x32xf32>, %{{.*}}: memref<?x?x40xf32>, %{{.*}}: memref<2xi64>)
func.func @conv1d(%x: tensor<?x?x64xf32>) -> tensor<?x?x40xf32> {
  %w = tbc.param "c_fc.weight" : tensor<64x40xf32>
  %p = tbc.linear %x, %w weight_in_out : tensor<?x?x64xf32>, tensor<64x40xf32> -> tensor<?x?x40xf32>
  return %p : tensor<?x?x40xf32>
}
