"""torch.Tensor's methods on kiln.Tensor: each equals its kiln.functional twin (eager and staged),
matches numpy (and torch, where it is installed) with torch's method semantics, and stages while
tracing."""
import re

import numpy as np
import pytest

import kiln
from kiln import functional as F

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
POSITIVE = RNG.uniform(0.25, 4.0, (3, 4)).astype(np.float32)
LAYOUT = kiln.TensorLayout(kiln.DType.float32, [3, 4])


def staged_ops(fn, layout=LAYOUT):
    text = kiln.compilation.stage(fn)(layout).to_mlir()
    return re.findall(r'"(kiln\.[a-z_0-9]+)"\(', text)


UNARY = ["relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "sin", "cos", "erf", "floor",
         "ceil", "round", "sign", "log1p", "expm1"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_methods_are_their_functional_twins(name):
    x = kiln.Tensor(POSITIVE if name in ("log", "sqrt", "rsqrt", "log1p") else X)
    method = getattr(x, name)()
    twin = getattr(F, name)(x)
    np.testing.assert_array_equal(np.asarray(method), np.asarray(twin))
    ops = staged_ops(lambda t: getattr(t, name)())
    assert ops and ops == staged_ops(lambda t: getattr(F, name)(t))


def test_lucids_documented_example():
    x, y = RNG.standard_normal((2, 3)).astype(np.float32), RNG.standard_normal((4, 3)).astype(np.float32)
    out = (kiln.Tensor(x) @ kiln.Tensor(y).T).relu()
    np.testing.assert_allclose(np.asarray(out), np.maximum(x @ y.T, 0), rtol=1e-6, atol=1e-6)


def test_methods_stage_while_tracing_and_run_compiled():
    @kiln.compile
    def head(x, w):
        return (x @ w.mT).relu().softmax(-1).sum(dim=1, keepdim=True)

    x, w = RNG.standard_normal((5, 3)).astype(np.float32), RNG.standard_normal((4, 3)).astype(np.float32)
    logits = np.maximum(x @ w.T, 0)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(head(x, w)), (e / e.sum(-1, keepdims=True)).sum(1, keepdims=True),
                               rtol=1e-5, atol=1e-6)
    assert staged_ops(lambda t: t.relu().sum(1), LAYOUT) == staged_ops(lambda t: F.sum(F.relu(t), 1), LAYOUT)


def test_reductions_follow_torchs_method_semantics():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = kiln.Tensor(a)
    assert x.sum().shape == [] and x.sum().item() == a.sum()
    np.testing.assert_array_equal(np.asarray(x.sum(1)), a.sum(1))
    np.testing.assert_array_equal(np.asarray(x.sum((0, 2), keepdim=True)), a.sum((0, 2), keepdims=True))
    np.testing.assert_allclose(np.asarray(x.mean(-1)), a.mean(-1), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(x.sum(dtype=kiln.DType.float64)), a.sum())
    ints = kiln.Tensor(a.astype(np.int32))
    assert ints.sum().dtype == kiln.DType.int64  # torch sums integers in int64
    with pytest.raises(kiln.Error, match="needs a floating-point tensor, got i32"):
        ints.mean()
    np.testing.assert_allclose(np.asarray(x.var(1)), a.var(1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(x.std(1, correction=0)), a.std(1), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(x.cumsum(2)), a.cumsum(2))
    np.testing.assert_array_equal(np.asarray(x.amax((0, 1))), a.max((0, 1)))


def test_max_and_min_with_and_without_dim():
    a = np.array([[1, 5, 5], [-2, 0, -1], [7, 7, 3]], np.float32)
    x = kiln.Tensor(a)
    assert x.max().item() == 7 and x.min().item() == -2
    values, indices = x.max(1)
    np.testing.assert_array_equal(np.asarray(values), [5, 0, 7])
    np.testing.assert_array_equal(np.asarray(indices), [1, 1, 0])  # the first of equal maxima
    result = x.min(dim=0, keepdim=True)
    assert result.values.shape == [1, 3] and np.asarray(result.indices).tolist() == [[1, 1, 1]]
    np.testing.assert_array_equal(np.asarray(x.max(kiln.Tensor(np.zeros(3, np.float32)))), np.maximum(a, 0))
    assert x.argmax().item() == 6
    np.testing.assert_array_equal(np.asarray(x.argmin(1)), a.argmin(1))
    top = x.topk(2)
    np.testing.assert_array_equal(np.asarray(top.values), [[5, 5], [0, -1], [7, 7]])


def test_shape_methods_follow_torch():
    a = RNG.standard_normal((2, 3, 1, 4)).astype(np.float32)
    x = kiln.Tensor(a)
    assert x.flatten().shape == [24]
    assert x.flatten(1).shape == [2, 12]
    assert x.flatten(1, 2).shape == [2, 3, 4]
    assert kiln.Tensor(np.array(2, np.float32)).flatten().shape == [1]
    assert x.squeeze().shape == [2, 3, 4]
    assert x.squeeze(0).shape == [2, 3, 1, 4]
    assert x.squeeze(2).shape == [2, 3, 4]
    assert x.unsqueeze(-1).shape == [2, 3, 1, 4, 1]
    assert x.view(6, 4).shape == [6, 4] and x.view((6, -1)).shape == [6, 4]
    assert x.reshape([4, 6]).shape == [4, 6]
    np.testing.assert_array_equal(np.asarray(x.permute(3, 0, 1, 2)), a.transpose(3, 0, 1, 2))
    np.testing.assert_array_equal(np.asarray(x.permute([3, 0, 1, 2])), a.transpose(3, 0, 1, 2))
    np.testing.assert_array_equal(np.asarray(x.transpose(0, 3)), a.swapaxes(0, 3))
    np.testing.assert_array_equal(np.asarray(x.mT), a.swapaxes(-1, -2))
    m = kiln.Tensor(X)
    np.testing.assert_array_equal(np.asarray(m.t()), X.T)
    np.testing.assert_array_equal(np.asarray(m.T), X.T)
    assert m.expand(2, 3, 4).shape == [2, 3, 4]
    pieces = kiln.Tensor(np.arange(7, dtype=np.float32)).split(3)
    assert [p.shape for p in pieces] == [[3], [3], [1]]
    assert [p.shape for p in m.chunk(2, dim=1)] == [[3, 2], [3, 2]]
    assert x.size() == [2, 3, 1, 4] and x.size(-1) == 4 and x.dim() == 4 and x.ndim == 4 and x.numel() == 24


def test_dtype_conversions():
    x = kiln.Tensor(X * 3)
    assert x.to(kiln.DType.int32).dtype == kiln.DType.int32
    assert x.int().dtype == kiln.DType.int32 and x.long().dtype == kiln.DType.int64
    assert x.double().dtype == kiln.DType.float64 and x.half().dtype == kiln.DType.float16
    assert x.bool().dtype == kiln.DType.bool and x.int().float().dtype == kiln.DType.float32
    assert x.to("cpu").dtype == kiln.DType.float32
    assert x.to(kiln.Tensor(np.zeros(1, np.float64))).dtype == kiln.DType.float64
    np.testing.assert_array_equal(np.asarray(x.int()), np.asarray(F.cast(x, kiln.DType.int32)))
    with pytest.raises(kiln.Error, match="Tensor.to: expected a kiln.DType"):
        x.to("gpu")


def test_elementwise_methods_with_numbers_and_tensors():
    x = kiln.Tensor(X)
    np.testing.assert_allclose(np.asarray(x.add(1).mul(2).sub(x).div(4)), ((X + 1) * 2 - X) / 4, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(x.pow(2)), X ** 2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(2 ** x), 2.0 ** X, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(x.clamp(min=0)), np.maximum(X, 0))
    np.testing.assert_array_equal(np.asarray(x.clamp(max=0.5)), np.minimum(X, 0.5))
    np.testing.assert_array_equal(np.asarray(x.clamp(-0.5, 0.5)), np.clip(X, -0.5, 0.5))
    np.testing.assert_array_equal(np.asarray(abs(x)), np.abs(X))
    np.testing.assert_array_equal(np.asarray(x.gt(0)), X > 0)
    np.testing.assert_array_equal(np.asarray(x.where(x.gt(0), kiln.Tensor(np.zeros_like(X)))), np.maximum(X, 0))
    with pytest.raises(kiln.Error, match="needs a min, a max or both"):
        x.clamp()


torch = pytest.importorskip("torch")


@pytest.mark.parametrize("call", [
    lambda t: t.relu(), lambda t: t.sigmoid(), lambda t: t.tanh(), lambda t: t.exp(), lambda t: t.abs(),
    lambda t: t.neg(), lambda t: t.sum(), lambda t: t.sum(1), lambda t: t.sum(0, keepdim=True), lambda t: t.mean(),
    lambda t: t.mean(1), lambda t: t.max(), lambda t: t.min(), lambda t: t.max(1).values, lambda t: t.max(1).indices,
    lambda t: t.min(0).indices, lambda t: t.softmax(-1), lambda t: t.log_softmax(0), lambda t: t.flatten(),
    lambda t: t.unsqueeze(1), lambda t: t.unsqueeze(0).squeeze(), lambda t: t.T, lambda t: t.t(), lambda t: t.mT,
    lambda t: t.clamp(min=0), lambda t: t.clamp(-0.5, 0.5), lambda t: t.pow(2), lambda t: t.argmax(),
    lambda t: t.var(1), lambda t: t.std(), lambda t: t.cumsum(1), lambda t: t.view(4, 3), lambda t: t.permute(1, 0),
])
def test_methods_match_torch(call):
    expected = call(torch.from_numpy(X.copy())).numpy()
    got = np.asarray(call(kiln.Tensor(X.copy())))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
