"""The four benchmark workloads (mlp, ewchain, attn, cnn) written in Python, against PyTorch's reference
outputs (max abs error <= 1e-4), on the interpreter and on the JIT tier."""
import math
import os

import numpy as np
import pytest

import kiln
from kiln import compilation, functional as F
from conftest import BENCH_DATA

pytestmark = pytest.mark.skipif(BENCH_DATA is None or not os.path.isdir(BENCH_DATA),
                                reason=f"KILN_TEST_BENCH_DATA does not name the workloads' reference data ({BENCH_DATA})")


def weight_specs(weights):
    return {name: t.layout for name, t in weights.items()}


def w(name, layouts):
    return F.constant_external(name, layouts[name])


def mlp(layouts):
    def fn(x):
        h = F.gelu(F.linear(x, w("fc1.weight", layouts), w("fc1.bias", layouts)))
        h = F.gelu(F.linear(h, w("fc2.weight", layouts), w("fc2.bias", layouts)))
        return F.linear(h, w("fc3.weight", layouts), w("fc3.bias", layouts))
    return fn


def ewchain(_):
    return lambda x: F.tanh(x * 1.5 + 0.25) * F.sigmoid(x) - x * 0.1


def attn(layouts):
    heads, model = 4, 256
    head_dim = model // heads

    def fn(x):
        batch, seq = x.dim_of(0), x.dim_of(1)
        qkv = F.linear(x, w("qkv.weight", layouts), w("qkv.bias", layouts))
        q, k, v = (F.squeeze(p, 0) for p in
                   F.split(qkv.reshape([batch, seq, 3, heads, head_dim]).permute([2, 0, 3, 1, 4]), [1, 1, 1], 0))
        att = F.softmax((q @ k.transpose(2, 3)) * (1.0 / math.sqrt(head_dim)), -1)
        ctx = (att @ v).transpose(1, 2).reshape([batch, seq, model])
        h = F.layer_norm(x + F.linear(ctx, w("out.weight", layouts), w("out.bias", layouts)),
                         w("ln1.weight", layouts), w("ln1.bias", layouts))
        ff = F.linear(F.relu(F.linear(h, w("ff1.weight", layouts), w("ff1.bias", layouts))),
                      w("ff2.weight", layouts), w("ff2.bias", layouts))
        return F.layer_norm(h + ff, w("ln2.weight", layouts), w("ln2.bias", layouts))
    return fn


def cnn(layouts):
    def fn(x):
        h = F.relu(F.conv2d(x, w("c1.weight", layouts), w("c1.bias", layouts), padding=1))
        h = F.relu(F.conv2d(h, w("c2.weight", layouts), w("c2.bias", layouts), stride=2, padding=1))
        h = F.relu(F.conv2d(h, w("c3.weight", layouts), w("c3.bias", layouts), padding=1))
        return F.linear(F.mean(h, [2, 3]), w("fc.weight", layouts), w("fc.bias", layouts))
    return fn


WORKLOADS = {"mlp": (mlp, [1, 8, 64]), "ewchain": (ewchain, [64]), "attn": (attn, [1, 8]), "cnn": (cnn, [1, 8])}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_matches_pytorch(name, session):
    build, batches = WORKLOADS[name]
    directory = os.path.join(BENCH_DATA, name)
    weights_file = os.path.join(directory, "weights.safetensors")
    weights = kiln.load_safetensors(weights_file) if os.path.exists(weights_file) else {}
    first = np.load(os.path.join(directory, f"b{batches[0]}_input.npy"))
    spec = kiln.TensorLayout(kiln.DType.float32, ["batch"] + list(first.shape[1:]))
    run = compilation.compile(build(weight_specs(weights)), weights=weights, session=session)(spec)
    for batch in batches:
        x = np.load(os.path.join(directory, f"b{batch}_input.npy"))
        want = np.load(os.path.join(directory, f"b{batch}_output.npy"))
        for _ in range(2):  # the second call runs where the session promotes to
            got = np.asarray(run(x))
        assert got.shape == want.shape
        assert np.max(np.abs(got - want)) <= 1e-4, f"{name} b{batch} on {run.last_tier}"
    if session.mode == "always" and kiln.has_jit:
        assert run.last_tier == "jit"
