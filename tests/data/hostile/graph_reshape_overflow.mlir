module @m {
  func.func @main(%arg0: !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32> {
    %0 = "kiln.reshape"(%arg0) {shape = [4294967296, 4294967296, 16]} : (!kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32>
    return %0 : !kiln.tensor<[2], f32>
  }
}
