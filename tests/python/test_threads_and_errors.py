"""Calls release the GIL: one callable from 8 Python threads agrees with single-threaded calls.
kiln::Error arrives as kiln.Error (a RuntimeError) with .kind and the C++ message."""
import threading

import numpy as np
import pytest

import kiln
from kiln import functional as F


def test_eight_threads_with_mixed_batches_match_single_threaded_results(session):
    spec = kiln.TensorLayout(kiln.DType.float32, ["batch", 64])
    w = np.linspace(-1, 1, 64 * 32, dtype=np.float32).reshape(32, 64)
    run = kiln.compilation.compile(lambda x: F.gelu(F.linear(x, F.constant(w))), session=session)(spec)
    inputs = [np.sin(np.arange(b * 64, dtype=np.float32) + b).reshape(b, 64) for b in (1, 3, 8, 17)]
    expected = [np.asarray(run(x)).copy() for x in inputs]
    failures = []

    def worker(seed):
        for i in range(40):
            k = (seed + i) % len(inputs)
            got = np.asarray(run(inputs[k]))
            if not np.array_equal(got, expected[k]):
                failures.append((seed, i))

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_errors_keep_the_cpp_message_and_kind():
    assert issubclass(kiln.Error, RuntimeError)
    spec_a = kiln.TensorLayout(kiln.DType.float32, ["batch", 3])
    spec_b = kiln.TensorLayout(kiln.DType.float32, [4, 5])
    with pytest.raises(kiln.Error) as info:
        kiln.compilation.stage(lambda a, b: F.matmul(a, b))(spec_a, spec_b)
    assert info.value.kind == "shape"
    assert str(info.value).startswith("shape error: kiln.matmul at test_threads_and_errors.py:")
    assert str(info.value).endswith("inner dims differ: [batch, 3] x [4, 5]")


def test_a_live_tensor_is_not_a_spec():
    with pytest.raises(kiln.Error, match="a live Tensor cannot be a spec: pass tensor.layout"):
        kiln.compilation.stage(lambda x: x)(kiln.Tensor.ones([2]))


def test_call_arguments_are_checked():
    run = kiln.compilation.compile(lambda x: x + 1.0)(kiln.TensorLayout(kiln.DType.float32, ["n", 2]))
    with pytest.raises(kiln.Error, match=r"argument 0: expected f32 \[n, 2\] on cpu:0, got f32 \[3, 3\]"):
        run(np.zeros((3, 3), np.float32))
