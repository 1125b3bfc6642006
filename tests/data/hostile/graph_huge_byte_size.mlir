module @m {
  func.func @main(%arg0: !kiln.tensor<[2305843009213693952], f64>) -> () {
    return
  }
}
