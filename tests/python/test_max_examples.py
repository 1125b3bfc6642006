"""Modular MAX's two documented examples, verbatim but for the imports."""
import numpy as np

from kiln import compilation, functional as F
from kiln import DType, CPU, TensorLayout, BufferLayout, Tensor


def test_compile_with_a_weight_then_call_with_any_batch():
    w_type = TensorLayout(DType.float32, [2], CPU())
    def layer(x: Tensor) -> Tensor:
        return x * F.constant_external("w", w_type)
    x_type = TensorLayout(DType.float32, ["batch", 2], CPU())
    w = Tensor.ones([2], device=CPU()) * 3
    run = compilation.compile(layer, weights={"w": w})(x_type)
    out = run(Tensor.ones([4, 2], device=CPU()))
    np.testing.assert_array_equal(np.asarray(out), np.full((4, 2), 3.0, np.float32))
    assert np.asarray(run(Tensor.ones([7, 2]))).shape == (7, 2)


def test_stage_prints_mlir_with_python_lines():
    def combine(kv: dict[str, Tensor], alpha: float) -> Tensor:
        return (kv["a"] + kv["b"]) * alpha
    spec = TensorLayout(DType.float32, [2], CPU())
    text = str(compilation.stage(combine)({"a": spec, "b": spec}, 2.0))
    assert '"kiln.add"(%arg0, %arg1)' in text
    assert '"kiln.mul"' in text
    # The op's Python file and line, as the C++ front end records C++ lines.
    line = combine.__code__.co_firstlineno + 1
    assert f'loc("test_max_examples.py":{line}:' in text


def test_specs_nest_and_scalars_are_checked_at_each_call():
    spec = TensorLayout(DType.float32, [3], CPU())
    run = compilation.compile(lambda pair, k: pair[0] * k + pair[1])((spec, spec), 2.0)
    a, b = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
    np.testing.assert_allclose(np.asarray(run((a, b), 2.0)), a * 2 + b)
    import kiln
    try:
        run((a, b), 3.0)
        raise AssertionError("a different baked scalar was accepted")
    except kiln.Error as e:
        assert e.kind == "spec"
        assert "tree structure mismatch at '1': expected float:2.0, got float:3.0" in str(e)


def test_buffer_store_writes_the_callers_buffer():
    buf = BufferLayout(DType.float32, [3], CPU())
    x = TensorLayout(DType.float32, [3], CPU())
    run = compilation.compile(lambda b, v: F.buffer_store(b, v * 2))(buf, x)
    target = np.zeros(3, np.float32)
    run(target, np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(target, [0, 2, 4])


def test_as_subgraph_stages_one_private_function_called_twice():
    block = F.as_subgraph("block", lambda x: F.relu(x) * 2.0)
    spec = TensorLayout(DType.float32, [3], CPU())
    text = str(compilation.stage(lambda x: block(block(x)))(spec))
    assert text.count("func.func private @block") == 1
    assert text.count("func.call @block(") == 2
    run = compilation.compile(lambda x: block(block(x)))(spec)
    np.testing.assert_array_equal(np.asarray(run(np.array([-1, 1, 2], np.float32))), [0, 4, 8])
