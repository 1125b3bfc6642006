module @m {
  func.func @main(%arg0: !kiln.tensor<[1, 1, 7, 7], f32>) -> !kiln.tensor<[1, 1, 7, 7], f32> {
    %0 = "kiln.max_pool2d"(%arg0) {kernel = array<i64: 3, 3>, padding = array<i64: 4611686018427387904, 4611686018427387904>, stride = array<i64: 1, 1>} : (!kiln.tensor<[1, 1, 7, 7], f32>) -> !kiln.tensor<[1, 1, 7, 7], f32>
    return %0 : !kiln.tensor<[1, 1, 7, 7], f32>
  }
}
