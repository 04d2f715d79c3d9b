// RUN: tbc-opt %s --tbc-approximate-math | FileCheck %s --implicit-check-not=math.exp --implicit-check-not=math.tanh --implicit-check-not=math.erf

// exp (softmax, SiLU), tanh (GELU-tanh, soft-caps) and erf (exact GELU)
// become polynomials of arith/math.fma ops, scalar or vector; ops without
// an approximation (sin, cos of the RoPE tables) stay.
// CHECK-LABEL: func.func @transcendentals
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK: math.fma {{.*}} : vector<16xf32>
// CHECK: math.cos
// CHECK: return
func.func @transcendentals(%x: f32, %v: vector<16xf32>) -> (f32, f32, vector<16xf32>, f32, f32) {
  %a = math.exp %x : f32
  %b = math.tanh %x : f32
  %c = math.exp %v : vector<16xf32>
  %d = math.erf %x : f32
  %e = math.cos %x : f32
  return %a, %b, %c, %d, %e : f32, f32, vector<16xf32>, f32, f32
}
