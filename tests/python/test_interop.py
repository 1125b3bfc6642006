"""Zero-copy both ways with numpy and torch: the memory is shared and the producer kept alive."""
import gc

import numpy as np
import pytest

import kiln


def test_numpy_views_a_kiln_tensor_and_writes_through():
    t = kiln.Tensor.zeros([2, 3])
    view = np.asarray(t)
    view[1, 2] = 5.0
    assert t.numpy()[1, 2] == 5.0
    assert np.from_dlpack(t)[1, 2] == 5.0


def test_kiln_views_a_numpy_array_and_keeps_it_alive():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = kiln.from_dlpack(a)
    a[0, 0] = 42.0
    assert np.asarray(t)[0, 0] == 42.0
    del a
    gc.collect()
    np.testing.assert_array_equal(np.asarray(t).ravel()[1:], [1, 2, 3, 4, 5])


def test_dtypes_round_trip_through_numpy():
    for dtype, kind in [(np.float64, kiln.DType.float64), (np.float16, kiln.DType.float16),
                        (np.int32, kiln.DType.int32), (np.int64, kiln.DType.int64), (np.int8, kiln.DType.int8),
                        (np.uint8, kiln.DType.uint8)]:
        a = np.arange(4).astype(dtype)
        t = kiln.Tensor(a)
        assert t.dtype == kind
        np.testing.assert_array_equal(np.asarray(t), a)


def test_non_contiguous_memory_is_refused_with_a_clear_error():
    a = np.arange(6, dtype=np.float32).reshape(2, 3).T
    with pytest.raises(kiln.Error, match="C-contiguous"):
        kiln.from_dlpack(a)


def test_weights_and_arguments_from_numpy_are_used_in_place():
    w = np.full(3, 2.0, np.float32)
    spec = kiln.TensorLayout(kiln.DType.float32, [3])
    run = kiln.compilation.compile(
        lambda x: x * kiln.functional.constant_external("w", spec), weights={"w": w})(spec)
    np.testing.assert_array_equal(np.asarray(run(np.ones(3, np.float32))), [2, 2, 2])


torch = pytest.importorskip("torch")


def test_torch_views_a_kiln_tensor_and_writes_through():
    t = kiln.Tensor.ones([4])
    view = torch.from_dlpack(t)
    view[2] = 7.0
    assert np.asarray(t)[2] == 7.0


def test_kiln_views_a_torch_tensor_and_keeps_it_alive():
    source = torch.arange(5, dtype=torch.float32)
    t = kiln.from_dlpack(source)
    source[4] = -1.0
    assert np.asarray(t)[4] == -1.0
    del source
    gc.collect()
    np.testing.assert_array_equal(np.asarray(t), [0, 1, 2, 3, -1])


def test_torch_bf16_tensors_cross_over():
    # torch 1.13 exports no bool tensors through DLPack ("Bool type is not supported by dlpack").
    half = kiln.from_dlpack(torch.tensor([1.5, -2.0], dtype=torch.bfloat16))
    assert half.dtype == kiln.DType.bfloat16
    assert torch.equal(torch.from_dlpack(half), torch.tensor([1.5, -2.0], dtype=torch.bfloat16))
