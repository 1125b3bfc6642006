module @m {
  func.func @main(%arg0: !kiln.tensor<[1099511627776, 1024], f32>) -> () {
    return
  }
}
