module @m {
  func.func @main(%x: !kiln.tensor<[1, 1, 8, 8], f32>, %w: !kiln.tensor<[1, 1, 3, 3], f32>) -> !kiln.tensor<[1, 1, 6, 6], f32> {
    %0 = "kiln.conv2d"(%x, %w) {dilation = array<i64: 4611686018427387904, 1>, groups = 1 : i64, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (!kiln.tensor<[1, 1, 8, 8], f32>, !kiln.tensor<[1, 1, 3, 3], f32>) -> !kiln.tensor<[1, 1, 6, 6], f32>
    return %0 : !kiln.tensor<[1, 1, 6, 6], f32>
  }
}
