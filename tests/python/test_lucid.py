"""lucid's compile forms: kiln.compile(fn), @kiln.compile, @kiln.compile(dynamic=True) and
kiln.compile(module) with its parameters, state_dict and load_state_dict."""
import numpy as np

import kiln
from kiln import functional as F


def test_compile_fn_traces_once_per_signature():
    fn = kiln.compile(lambda x: F.relu(x) * 2.0, dynamic=False)
    for _ in range(3):
        out = fn(np.array([-1.0, 2.0], np.float32))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 4.0])
    fn(np.zeros(3, np.float32))
    stats = fn.stats()
    assert stats.entries == 2
    assert stats.misses == 2
    assert stats.hits == 2


def test_decorator_forms():
    @kiln.compile
    def double(x):
        return x + x

    @kiln.compile(dynamic=True)
    def scaled(x):
        return F.tanh(x) * 0.5

    np.testing.assert_array_equal(np.asarray(double(np.ones(2, np.float32))), [2.0, 2.0])
    for batch in (1, 3, 8):
        x = np.linspace(-2, 2, batch * 4, dtype=np.float32).reshape(batch, 4)
        np.testing.assert_allclose(np.asarray(scaled(x)), np.tanh(x) * 0.5, rtol=1e-6, atol=1e-7)
    assert scaled.stats().entries == 1  # dim 0 symbolic: one entry for every batch


class TwoLayer(kiln.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = kiln.nn.Linear(4, 8, seed=1)
        self.act = kiln.nn.ReLU()
        self.fc2 = kiln.nn.Linear(8, 2, seed=3)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def reference(state, x):
    h = np.maximum(x @ np.asarray(state["fc1.weight"]).T + np.asarray(state["fc1.bias"]), 0)
    return h @ np.asarray(state["fc2.weight"]).T + np.asarray(state["fc2.bias"])


def test_compiled_module_delegates_and_reloads():
    model = TwoLayer()
    compiled = kiln.compile(model)
    assert sorted(compiled.state_dict()) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    assert len(compiled.parameters()) == 4
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(np.asarray(compiled(x)), reference(model.state_dict(), x), rtol=1e-5, atol=1e-6)
    # The graph reads the weights by name: the staged entry holds no copy of them.
    new_state = {name: np.asarray(value) * 2 for name, value in model.state_dict().items()}
    compiled.load_state_dict(new_state)
    np.testing.assert_allclose(np.asarray(compiled(x)), reference(new_state, x), rtol=1e-5, atol=1e-6)


def test_load_state_dict_refuses_wrong_names_and_shapes():
    model = TwoLayer()
    state = {name: np.asarray(value) for name, value in model.state_dict().items()}
    state["fc1.weight"] = np.zeros((3, 3), np.float32)
    try:
        model.load_state_dict(state)
        raise AssertionError("accepted a weight of the wrong shape")
    except kiln.Error as e:
        assert e.kind == "weight" and "'fc1.weight' is f32 [8, 4]" in str(e)
