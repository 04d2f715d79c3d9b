// The single-row (decode) tile's software prefetch: decode-prefetch bytes
// ahead of its loads, into L2 (locality<2>), one per cache line; none at 0
// (AMD's Zen streams f32 panels faster on its hardware prefetcher alone).
// Multi-row tiles prefetch their next panel (locality<3>) either way.
// RUN: tbc-opt %s --tbc-outline-kernels --tbc-lower-to-cpu | FileCheck %s --check-prefix=PF8K
// RUN: tbc-opt %s --tbc-outline-kernels --tbc-lower-to-cpu=decode-prefetch=4096 | FileCheck %s --check-prefix=PF4K
// RUN: tbc-opt %s --tbc-outline-kernels --tbc-lower-to-cpu=decode-prefetch=0 | FileCheck %s --check-prefix=NOPF
// RUN: not tbc-opt %s --tbc-outline-kernels --tbc-lower-to-cpu=decode-prefetch=-1 2>&1 | FileCheck %s --check-prefix=BAD
// Decode streams (decode-streams=2 or 4; Zen 3 reads four): a core's panels
// cut into that many runs, panel i of every run read at once, the 4 unrolled k
// steps shared among them, each panel prefetched; a run's extra panel alone.
// RUN: tbc-opt %s --tbc-outline-kernels --tbc-lower-to-cpu=decode-streams=2 | FileCheck %s --check-prefix=TWO
// RUN: tbc-opt %s --tbc-outline-kernels --tbc-lower-to-cpu=decode-streams=4 | FileCheck %s --check-prefix=FOUR
// RUN: not tbc-opt %s --tbc-outline-kernels --tbc-lower-to-cpu=decode-streams=3 2>&1 | FileCheck %s --check-prefix=BAD

// A panel row is 32 f32 = 128 bytes: 8 KB ahead is 64 rows, 4 KB 32; the
// unrolled iteration's 4 rows are 8 cache lines, two per row.
// PF8K-LABEL: func.func @k0_linear(
// PF8K-SAME: memref<2x1024x32xf32>
// PF8K: locality<3>
// PF8K: %[[ROW:.*]] = arith.addi %arg{{[0-9]+}}, %c64{{(_[0-9]+)?}} : index
// PF8K-NEXT: %[[CLAMPED:.*]] = arith.minui %[[ROW]], %c1023{{.*}} : index
// PF8K: memref.prefetch %{{.*}}[%[[CLAMPED]], %c0{{.*}}], read, locality<2>, data
// PF8K-COUNT-7: memref.prefetch {{.*}} locality<2>
// PF8K-NOT: locality<2>
// PF8K: return

// PF4K-LABEL: func.func @k0_linear(
// PF4K: locality<3>
// PF4K: %[[ROW:.*]] = arith.addi %arg{{[0-9]+}}, %c32{{(_[0-9]+)?}} : index
// PF4K-NEXT: %[[CLAMPED:.*]] = arith.minui %[[ROW]], %c1023{{.*}} : index
// PF4K: memref.prefetch %{{.*}}[%[[CLAMPED]], %c0{{.*}}], read, locality<2>, data

// NOPF-LABEL: func.func @k0_linear(
// NOPF: memref.prefetch {{.*}} locality<3>
// NOPF-NOT: locality<2>
// NOPF: return

// TWO-LABEL: func.func @k0_linear(
// TWO: %[[BASE:.*]] = arith.divui %[[N:.*]], %c2 : index
// TWO: %[[EXTRA:.*]] = arith.remui %[[N]], %c2{{.*}} : index
// TWO: %[[MIN0:.*]] = arith.minui %[[EXTRA]], %c0{{.*}} : index
// TWO: %[[OFF0:.*]] = arith.addi %{{.*}}, %[[MIN0]] : index
// TWO-NEXT: %[[S0:.*]] = arith.addi %[[BEGIN:.*]], %[[OFF0]] : index
// TWO: %[[MIN1:.*]] = arith.minui %[[EXTRA]], %c1{{.*}} : index
// TWO: %[[OFF1:.*]] = arith.addi %{{.*}}, %[[MIN1]] : index
// TWO-NEXT: %[[S1:.*]] = arith.addi %[[BEGIN]], %[[OFF1]] : index
// TWO: scf.for %[[I:.*]] = %c0{{.*}} to %[[BASE]]
// TWO-NEXT: %[[P:.*]] = arith.addi %[[S0]], %[[I]] : index
// TWO-NEXT: %[[Q:.*]] = arith.addi %[[S1]], %[[I]] : index
// TWO: %[[PANEL_P:.*]] = memref.subview %arg1[%[[P]], 0, 0]
// TWO-NEXT: %[[PANEL_Q:.*]] = memref.subview %arg1[%[[Q]], 0, 0]
// TWO: scf.for {{.*}} step %c2{{(_[0-9]+)?}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// TWO-COUNT-4: memref.prefetch %[[PANEL_P]]{{.*}} locality<2>
// TWO-COUNT-4: memref.prefetch %[[PANEL_Q]]{{.*}} locality<2>
// TWO: vector.load %[[PANEL_P]]
// TWO: vector.load %[[PANEL_Q]]
// TWO: vector.load %[[PANEL_P]]
// TWO: vector.load %[[PANEL_Q]]
// Run j's extra panel (an odd count: run 0's), alone: run j's start
// (j base + min(j, extra) after the first panel) + base.
// TWO: scf.for %[[J:.*]] = %c0{{.*}} to %[[EXTRA]]
// TWO-NEXT: %[[SKIP:.*]] = arith.muli %[[BASE]], %[[J]] : index
// TWO-NEXT: %[[MINJ:.*]] = arith.minui %[[EXTRA]], %[[J]] : index
// TWO-NEXT: %[[OFF:.*]] = arith.addi %[[SKIP]], %[[MINJ]] : index
// TWO-NEXT: %[[START:.*]] = arith.addi %[[BEGIN]], %[[OFF]] : index
// TWO-NEXT: arith.addi %[[START]], %[[BASE]] : index
// TWO: return

// FOUR-LABEL: func.func @k0_linear(
// FOUR: %[[BASE:.*]] = arith.divui %[[N:.*]], %c4 : index
// FOUR: %[[EXTRA:.*]] = arith.remui %[[N]], %c4{{.*}} : index
// FOUR: scf.for %[[I:.*]] = %c0{{.*}} to %[[BASE]]
// FOUR-COUNT-4: arith.addi %{{.*}}, %[[I]] : index
// FOUR: %[[P0:.*]] = memref.subview %arg1
// FOUR-NEXT: %[[P1:.*]] = memref.subview %arg1
// FOUR-NEXT: %[[P2:.*]] = memref.subview %arg1
// FOUR-NEXT: %[[P3:.*]] = memref.subview %arg1
// One k step of each panel an iteration, into 8 accumulators.
// FOUR: scf.for {{.*}} step %c1{{(_[0-9]+)?}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// FOUR-COUNT-2: memref.prefetch %[[P0]]{{.*}} locality<2>
// FOUR-COUNT-2: memref.prefetch %[[P1]]{{.*}} locality<2>
// FOUR-COUNT-2: memref.prefetch %[[P2]]{{.*}} locality<2>
// FOUR-COUNT-2: memref.prefetch %[[P3]]{{.*}} locality<2>
// FOUR: vector.load %[[P0]]
// FOUR: vector.load %[[P1]]
// FOUR: vector.load %[[P2]]
// FOUR: vector.load %[[P3]]
// FOUR: scf.yield
// FOUR: scf.for %{{.*}} = %c0{{.*}} to %[[EXTRA]]
// FOUR: return

// BAD: decode-prefetch >= 0
func.func @decode(%x: tensor<?x?x1024xf32>) -> tensor<?x?x64xf32> {
  %w = tbc.param "p.weight" : tensor<64x1024xf32>
  %y = tbc.linear %x, %w : tensor<?x?x1024xf32>, tensor<64x1024xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}
