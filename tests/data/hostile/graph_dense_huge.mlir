module @m {
  func.func @main() -> !kiln.tensor<[2], f32> {
    %0 = "kiln.constant"() {value = dense<"0x0000803F"> : tensor<4294967296x4294967296x16xf32>} : () -> !kiln.tensor<[2], f32>
    return %0 : !kiln.tensor<[2], f32>
  }
}
