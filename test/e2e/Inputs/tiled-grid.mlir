// A model whose prefill of 1100 tokens gives the block-tiled projection a
// grid of several column blocks and more row tiles than one group of
// kTiledRowGroup (tiledBlockOrder): an RMS-normed 64 -> 288 projection (3
// column blocks of 128) and a 288 -> 96 head (9 k steps of 32; with
// --cuda-gemm-k 64 the only projection that walks 32, 288 not being a
// multiple of 64). cuda-tiled-grid.test.
module attributes {tbc.architecture = "TiledGridTest", tbc.max_positions = 2048 : i64, tbc.vocab_size = 96 : i64} {
  func.func @forward(%ids: tensor<?x?xi32> {tbc.name = "token_ids"}, %pos: tensor<?x?xi32> {tbc.name = "positions"}) -> tensor<?x?x96xf32> {
    %e = tbc.param "embed.weight" : tensor<96x64xf32>
    %g = tbc.param "norm.weight" : tensor<64xf32>
    %w_up = tbc.param "up.weight" : tensor<288x64xf32>
    %w_head = tbc.param "head.weight" : tensor<96x288xf32>
    %x = tbc.embedding %e[%ids] : tensor<96x64xf32>, tensor<?x?xi32>
    %n = tbc.rms_norm %x, %g eps = 1.0e-5 : tensor<?x?x64xf32>, tensor<64xf32>
    %h = tbc.linear %n, %w_up : tensor<?x?x64xf32>, tensor<288x64xf32> -> tensor<?x?x288xf32>
    %y = tbc.linear %h, %w_head : tensor<?x?x288xf32>, tensor<96x288xf32> -> tensor<?x?x96xf32>
    return %y : tensor<?x?x96xf32>
  }
}
