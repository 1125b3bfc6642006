"""The ops issue 14 added, from Python, against numpy loops (eager and compiled)."""
import numpy as np

import kiln
from kiln import compilation, functional as F


def softmax(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_causal_attention_matches_numpy_on_both_tiers(session):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 7, 8)).astype(np.float32) for _ in range(3))
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(8)
    scores = np.where(np.tril(np.ones((7, 7), bool)), scores, -np.inf)
    want = softmax(scores) @ v
    spec = kiln.TensorLayout(kiln.DType.float32, [2, 7, 8])
    run = compilation.compile(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
                              session=session)(spec, spec, spec)
    np.testing.assert_allclose(np.asarray(run(q, k, v)), want, rtol=1e-5, atol=1e-6)


def test_topk_einsum_embedding_expand_interpolate_eagerly():
    x = np.array([[3.0, 1.0, 4.0, 1.5]], np.float32)
    values, indices = F.topk(x, 2)
    np.testing.assert_array_equal(np.asarray(values), [[4.0, 3.0]])
    np.testing.assert_array_equal(np.asarray(indices), [[2, 0]])
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(np.asarray(F.einsum("ij,jk->ik", a, b)), a @ b)
    table = np.arange(8, dtype=np.float32).reshape(4, 2)
    np.testing.assert_array_equal(np.asarray(F.embedding(np.array([3, 0], np.int64), table)), table[[3, 0]])
    np.testing.assert_array_equal(np.asarray(F.expand(np.ones((1, 3), np.float32), [2, -1])), np.ones((2, 3)))
    image = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    np.testing.assert_array_equal(np.asarray(F.interpolate(image, scale_factor=2.0)),
                                  image.repeat(2, axis=2).repeat(2, axis=3))
    pooled = np.asarray(F.adaptive_avg_pool2d(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), 2))
    np.testing.assert_allclose(pooled.ravel(), [2.5, 4.5, 10.5, 12.5])
    normed = np.asarray(F.group_norm(np.arange(8, dtype=np.float32).reshape(1, 2, 4), 1))
    flat = np.arange(8, dtype=np.float64)
    np.testing.assert_allclose(normed.ravel(), (flat - flat.mean()) / np.sqrt(flat.var() + 1e-5), rtol=1e-5)
