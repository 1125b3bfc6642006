"""Modular MAX's two documented examples, with only the import lines changed.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/max_examples.py
"""
from kiln import compilation, functional as F
from kiln import DType, CPU, TensorLayout, BufferLayout, Tensor

w_type = TensorLayout(DType.float32, [2], CPU())
def layer(x: Tensor) -> Tensor:
    return x * F.constant_external("w", w_type)
x_type = TensorLayout(DType.float32, ["batch", 2], CPU())
w = Tensor.ones([2], device=CPU()) * 3
run = compilation.compile(layer, weights={"w": w})(x_type)
out = run(Tensor.ones([4, 2], device=CPU()))
print(out)

def combine(kv: dict[str, Tensor], alpha: float) -> Tensor:
    return (kv["a"] + kv["b"]) * alpha
spec = TensorLayout(DType.float32, [2], CPU())
print(compilation.stage(combine)({"a": spec, "b": spec}, 2.0))   # MLIR text
