module @m {
  func.func @main(%arg0: !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32> {
    %0 = func.call @ping(%arg0) : (!kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32>
    return %0 : !kiln.tensor<[2], f32>
  }
  func.func private @ping(%arg0: !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32> {
    %0 = func.call @pong(%arg0) : (!kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32>
    return %0 : !kiln.tensor<[2], f32>
  }
  func.func private @pong(%arg0: !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32> {
    %0 = func.call @ping(%arg0) : (!kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32>
    return %0 : !kiln.tensor<[2], f32>
  }
}
