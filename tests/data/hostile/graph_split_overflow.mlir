module @m {
  func.func @main(%arg0: !kiln.tensor<[2], f32>) -> (!kiln.tensor<[2], f32>, !kiln.tensor<[2], f32>) {
    %0:2 = "kiln.split"(%arg0) {axis = 0 : i64, sizes = array<i64: 9223372036854775807, 1>} : (!kiln.tensor<[2], f32>) -> (!kiln.tensor<[2], f32>, !kiln.tensor<[2], f32>)
    return %0#0, %0#1 : !kiln.tensor<[2], f32>, !kiln.tensor<[2], f32>
  }
}
