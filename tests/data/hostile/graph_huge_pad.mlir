module @m {
  func.func @main(%arg0: !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32> {
    %0 = "kiln.pad"(%arg0) {pads = array<i64: 1, 9223372036854775807>, value = 0.0 : f64} : (!kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32> loc("hostile.py":3:10)
    return %0 : !kiln.tensor<[2], f32>
  }
}
