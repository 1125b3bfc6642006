module @m {
  func.func @main() -> !kiln.tensor<[2], f32> {
    %0 = "kiln.arange"() {dtype = f32, start = 0.0 : f64, step = 1.0 : f64, stop = 0x7FF8000000000000 : f64} : () -> !kiln.tensor<[2], f32>
    return %0 : !kiln.tensor<[2], f32>
  }
}
