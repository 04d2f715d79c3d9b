// Two projections: the first reads a view 6 floats into a 70-float buffer
// (its rows start 8 bytes past a 16-byte boundary), the second a whole
// 64-float buffer (every row 16-byte aligned). cuda-rows-aligned.test.
module attributes {tbc.architecture = "RowsAlignedTest", tbc.max_positions = 128 : i64, tbc.vocab_size = 96 : i64} {
  func.func @forward(%ids: tensor<?x?xi32> {tbc.name = "token_ids"}, %pos: tensor<?x?xi32> {tbc.name = "positions"}) -> tensor<?x?x96xf32> {
    %e = tbc.param "embed.weight" : tensor<96x70xf32>
    %w_mid = tbc.param "mid.weight" : tensor<64x64xf32>
    %w_head = tbc.param "head.weight" : tensor<96x64xf32>
    %x = tbc.embedding %e[%ids] : tensor<96x70xf32>, tensor<?x?xi32>
    %skip, %view = tbc.split %x : tensor<?x?x70xf32> -> tensor<?x?x6xf32>, tensor<?x?x64xf32>
    %h = tbc.linear %view, %w_mid : tensor<?x?x64xf32>, tensor<64x64xf32> -> tensor<?x?x64xf32>
    %y = tbc.linear %h, %w_head : tensor<?x?x64xf32>, tensor<96x64xf32> -> tensor<?x?x96xf32>
    return %y : tensor<?x?x96xf32>
  }
}
