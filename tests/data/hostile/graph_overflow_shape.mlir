module @m {
  func.func @main(%arg0: !kiln.tensor<[4294967296, 4294967296, 16], f32>) -> () {
    return
  }
}
