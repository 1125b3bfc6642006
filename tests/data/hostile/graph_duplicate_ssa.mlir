module @m {
  func.func @main(%arg0: !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32> {
    %0 = "kiln.neg"(%arg0) : (!kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32>
    %0 = "kiln.exp"(%arg0) : (!kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32>
    return %0 : !kiln.tensor<[2], f32>
  }
}
