module @m {
  func.func @main(%arg0: !kiln.tensor<[2], f31>) -> () {
    return
  }
}
