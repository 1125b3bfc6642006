module @m {
  func.func @main() -> !kiln.tensor<[2], f32> {
    %0 = "kiln.arange"() {dtype = f32, start = 0.0 : f64, step = 0.001 : f64, stop = 1.0e30 : f64} : () -> !kiln.tensor<[2], f32>
    return %0 : !kiln.tensor<[2], f32>
  }
}
