func.func @f(%x: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  %0 = tbc.attention %x, %kv, %kv heads = 3 kv_heads = 2 head_dim = 16 scale = 0.25 : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  return %0 : tensor<?x?x64xf32>
}
