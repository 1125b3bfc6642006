"""Tensors on the accelerator from Python: t.to(device), t.device, export never reading the device."""
import os

import numpy as np
import pytest

import kiln


def require_device():
    if kiln.accelerator_count() == 0:
        if os.environ.get("KILN_TEST_REQUIRE_VULKAN") == "1":
            pytest.fail("no Vulkan device: " + kiln.accelerator_unavailable_reason())
        pytest.skip("no accelerator: " + kiln.accelerator_unavailable_reason())


def test_a_host_tensor_is_on_the_cpu():
    t = kiln.Tensor(np.arange(3, dtype=np.float32))
    assert t.device == kiln.CPU()
    assert repr(t.device) == "cpu:0"
    assert t.to(kiln.CPU()).device == kiln.CPU()


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.bool_])
def test_to_the_accelerator_and_back_is_bit_exact(dtype):
    require_device()
    if dtype is np.float32:
        array = np.array([np.nan, -0.0, np.inf, -np.inf, 1e-45, -3.4e38, 7.5], dtype=np.float32)
        host = kiln.Tensor(array)
    elif dtype is np.bool_:  # numpy exports no bools through DLPack: made by kiln
        array = np.array([True, False, True, True, False])
        host = kiln.Tensor(array.astype(np.int32)) != 0
    else:
        array = np.array([np.iinfo(dtype).min, -1, 0, 5, np.iinfo(dtype).max], dtype=dtype)
        host = kiln.Tensor(array)
    t = host.to(kiln.Accelerator())
    assert t.device == kiln.Accelerator()
    assert repr(t.device) == "accelerator:0"
    back = np.asarray(t.to(kiln.CPU()))
    assert back.dtype == array.dtype
    assert back.tobytes() == array.tobytes()
    assert np.asarray(t.to("cpu")).tobytes() == array.tobytes()


def test_export_of_a_device_tensor_says_to_copy_it_first():
    require_device()
    t = kiln.Tensor(np.ones(4, dtype=np.float32)).to("accelerator")
    for export in (lambda: t.numpy(), lambda: np.asarray(t), lambda: t.__dlpack__(), lambda: t.item()):
        with pytest.raises((kiln.Error, BufferError), match=r"accelerator:0.*\.to\((kiln\.)?CPU\(\)\)"):
            export()
    assert t.__dlpack_device__() == (7, 0)  # kDLVulkan: a consumer sees where it lives
    assert "on accelerator:0" in repr(t)
    with pytest.raises(kiln.Error, match="operand 0 is on accelerator:0"):
        t + 1.0


def test_a_tensor_numpy_cannot_view_raises_instead_of_ending_the_process():
    with pytest.raises(kiln.Error, match="bf16 has no Python buffer format"):
        np.asarray(kiln.Tensor.ones([2], kiln.DType.bfloat16))


def test_a_device_input_callable_returns_device_tensors():
    require_device()
    x = np.random.default_rng(5).standard_normal((3, 7)).astype(np.float32)

    def model(v):
        return v * 2.0 + 1.0

    f = kiln.compile(model, session=kiln.Session(mode="always", async_compile=False))
    got = f(kiln.Tensor(x).to(kiln.Accelerator()))
    assert got.device == kiln.Accelerator()
    np.testing.assert_allclose(np.asarray(got.to(kiln.CPU())), x * 2.0 + 1.0, rtol=1e-6)
    # Traced for device inputs: a host call is an error naming both devices, not a silent retrace.
    with pytest.raises(kiln.Error, match="expected a tensor on accelerator:0, got one on cpu:0"):
        f(x)


def test_a_cast_and_a_move_in_one_to():
    require_device()
    t = kiln.Tensor(np.array([1.5, -2.5], dtype=np.float32))
    moved = t.to(kiln.Accelerator(), kiln.DType.int32)
    assert moved.device == kiln.Accelerator() and moved.dtype == kiln.DType.int32
    back = moved.to(device="cpu", dtype=kiln.DType.float32)
    assert back.device == kiln.CPU()
    np.testing.assert_array_equal(np.asarray(back), [1.0, -2.0])


def test_without_an_accelerator_accelerator_says_why():
    if kiln.accelerator_count() > 0:
        with pytest.raises(kiln.Error, match="kiln uses one accelerator"):
            kiln.Accelerator(1)
        return
    with pytest.raises(kiln.Error, match="no accelerator:0: "):
        kiln.Accelerator()
