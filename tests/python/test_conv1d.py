"""kiln.functional.conv1d against torch.nn.functional.conv1d: eagerly and compiled on both tiers, on
odd sizes, every hyperparameter and edge values; and the errors bad inputs give."""

import itertools

import numpy as np
import pytest
import torch

import kiln
from kiln import compilation, functional as F

EDGES = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e30, -1e30, 1e-45, -1e-40], np.float32)


def sample(shape, seed, edges=False):
    x = np.random.default_rng(seed).uniform(-4, 4, shape).astype(np.float32)
    if edges:
        flat = x.reshape(-1)
        flat[3::7] = np.resize(EDGES, flat[3::7].shape)
    return x


def torch_conv1d(x, w, b, **kw):
    return torch.nn.functional.conv1d(torch.from_numpy(x), torch.from_numpy(w),
                                      None if b is None else torch.from_numpy(b), **kw).numpy()


def tolerance(x, w, b, **kw):
    """Per element: 1e-5 * (1 + the magnitude of its terms), the rounding any summation order may
    differ by (torch's own result is one such order)."""
    magnitude = torch_conv1d(np.abs(np.nan_to_num(x, posinf=0, neginf=0)), np.abs(w),
                             None if b is None else np.abs(b), **kw)
    return 1e-5 * (1 + magnitude)


def assert_matches_torch(got, x, w, b, **kw):
    want = torch_conv1d(x, w, b, **kw)
    got = np.asarray(got)
    assert got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[np.isinf(want)], want[np.isinf(want)])
    finite = np.isfinite(want)
    assert np.all(np.abs(got[finite] - want[finite]) <= tolerance(x, w, b, **kw)[finite])


def cases():
    for i, (length, channels, kernel) in enumerate(itertools.product([1, 7, 17, 1023], [1, 3], [1, 3, 5])):
        groups = 3 if channels == 3 and i % 2 else 1
        kw = dict(stride=1 + i % 3, padding=i % 3, dilation=1 + (i // 2) % 2, groups=groups)
        if length + 2 * kw["padding"] < kw["dilation"] * (kernel - 1) + 1:
            continue
        yield pytest.param(1 + i % 2, channels, 6 if groups == 3 else 2, length, kernel, i % 4 != 1, kw,
                           id=f"L{length}-C{channels}-K{kernel}-" + "-".join(f"{k}{v}" for k, v in kw.items()))


@pytest.mark.parametrize("batch,channels,out_channels,length,kernel,bias,kw", cases())
@pytest.mark.parametrize("edges", [False, True])
def test_eager_conv1d_matches_torch(batch, channels, out_channels, length, kernel, bias, kw, edges):
    x = sample((batch, channels, length), length + kernel, edges)
    w = sample((out_channels, channels // kw["groups"], kernel), 2)
    b = sample((out_channels,), 3) if bias else None
    assert_matches_torch(F.conv1d(x, w, b, **kw), x, w, b, **kw)


@pytest.mark.parametrize("batch,channels,out_channels,length,kernel,bias,kw", cases())
def test_compiled_conv1d_matches_torch_on_both_tiers(session, batch, channels, out_channels, length, kernel, bias, kw):
    x = sample((batch, channels, length), length * kernel, edges=True)
    w = sample((out_channels, channels // kw["groups"], kernel), 4)
    b = sample((out_channels,), 5) if bias else None
    weights = {"w": w} if b is None else {"w": w, "b": b}
    layouts = {name: kiln.TensorLayout(kiln.DType.float32, list(v.shape)) for name, v in weights.items()}

    def model(t):
        bias_t = F.constant_external("b", layouts["b"]) if "b" in layouts else None
        return F.conv1d(t, F.constant_external("w", layouts["w"]), bias_t, **kw)

    spec = kiln.TensorLayout(kiln.DType.float32, list(x.shape))
    run = compilation.compile(model, weights=weights, session=session)(spec)
    assert_matches_torch(run(x), x, w, b, **kw)
    lowerings = session.stats()[0]["ops_per_lowering"]
    assert ("dnnl.conv2d" in lowerings) == (session.mode == "always" and kiln.has_jit)


def test_stride_padding_and_dilation_take_an_int_or_a_one_element_sequence():
    x, w = sample((1, 2, 9), 6), sample((3, 2, 3), 7)
    assert_matches_torch(F.conv1d(x, w, stride=(2,), padding=[1], dilation=(2,)), x, w, None,
                         stride=2, padding=1, dilation=2)
    with pytest.raises(kiln.Error, match="stride needs 1 value"):
        F.conv1d(x, w, stride=(1, 2))


@pytest.mark.parametrize("x_shape,w_shape,kw,message", [
    ((4, 7), (6, 4, 3), {}, r"needs \[N, C, L\] input"),
    ((2, 4, 1, 7), (6, 4, 3), {}, r"needs \[N, C, L\] input"),
    ((2, 4, 7), (6, 1, 3), {"groups": 3}, "groups 3 must divide input channels 4"),
    ((2, 4, 7), (6, 3, 3), {}, "expects 3 input channels per group"),
    ((2, 4, 7), (6, 4, 9), {}, "window 9 is larger than the padded input 7"),
    ((2, 4, 7), (6, 4, 3), {"stride": 0}, "stride and dilation must be > 0"),
    ((2, 4, 7), (6, 4, 3), {"padding": -1}, "padding >= 0"),
])
def test_bad_inputs_are_errors_naming_the_op_and_the_problem(x_shape, w_shape, kw, message):
    with pytest.raises(kiln.Error, match=message) as raised:
        F.conv1d(sample(x_shape, 8), sample(w_shape, 9), **kw)
    assert "kiln.conv1d" in str(raised.value)


def test_integer_inputs_are_dtype_errors():
    with pytest.raises(kiln.Error, match="kiln.conv1d"):
        F.conv1d(np.ones((1, 2, 5), np.int32), np.ones((1, 2, 3), np.int32))
