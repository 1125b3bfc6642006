"""A kiln.nn module called inside a function compiled with kiln.compile(fn): its parameters are the
weights of the callable's session under unique dotted names (shared, not copied), and replacing them
on the module (load_state_dict, attribute assignment) takes effect at the next call, as in torch."""
import numpy as np
import pytest

import kiln
from kiln import nn

torch = pytest.importorskip("torch", reason="the modules are compared with torch.nn (python3-torch)")


def torch_mlp(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).eval()


def kiln_mlp(reference):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).eval()
    model.load_state_dict(reference.state_dict())
    return model


def reference_of(fn_of_torch_model, reference, x):
    with torch.no_grad():
        return fn_of_torch_model(reference, torch.from_numpy(x)).numpy()


def assert_close(actual, expected):
    actual = np.asarray(actual)
    assert actual.shape == expected.shape
    assert np.abs(actual - expected).max() <= 1e-5 * max(1.0, float(np.abs(expected).max()))


X = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)


def test_a_module_called_in_a_compiled_function_runs_with_its_parameters(session):
    reference = torch_mlp(0)
    model = kiln_mlp(reference)

    def head(x):
        return model(x).relu() * 2.0

    compiled = kiln.compile(head, session=session)
    assert_close(compiled(X), reference_of(lambda m, x: m(x).relu() * 2.0, reference, X))
    assert_close(compiled(X), reference_of(lambda m, x: m(x).relu() * 2.0, reference, X))  # the cached entry


def test_modules_reached_in_several_ways_in_one_function(session):
    """A module called twice, a parameter read without calling its module, and a submodule of a
    module already bound: each tensor has one name, and the result is torch's."""
    reference = torch_mlp(1)
    model = kiln_mlp(reference)

    def twice(x):
        hidden = model[0](x)  # the submodule first: it keeps the name it gets here
        return model(x) + model(x) + hidden.sum() * model[2].bias

    def twice_torch(m, x):
        return m(x) + m(x) + m[0](x).sum() * m[2].bias

    assert_close(kiln.compile(twice, session=session)(X), reference_of(twice_torch, reference, X))


def test_two_functions_on_one_session_keep_their_modules_apart(session):
    """Equal-named modules of two callables in one session (the default one, typically) must not
    overwrite each other's weights."""
    first, second = torch_mlp(2), torch_mlp(3)
    a, b = kiln_mlp(first), kiln_mlp(second)
    fa = kiln.compile(lambda x: a(x), session=session)
    fb = kiln.compile(lambda x: b(x), session=session)
    for _ in range(2):
        assert_close(fa(X), reference_of(lambda m, x: m(x), first, X))
        assert_close(fb(X), reference_of(lambda m, x: m(x), second, X))


def test_the_parameters_are_shared_not_baked_into_the_graph():
    session = kiln.Session(mode="off")
    big = nn.Linear(256, 256)
    kiln.compile(lambda x: big(x), session=session)(np.ones((1, 256), np.float32))
    stats = session.stats()[0]
    matrix = 256 * 256 * 4
    assert stats["weight_bytes"] >= matrix  # read in place from the session
    # The interpreter's packed copy for the matmul, but no second copy in the graph (baking gives 2x).
    assert stats["constant_bytes"] < 2 * matrix


def test_load_state_dict_after_the_first_call_takes_effect(session):
    old, new = torch_mlp(4), torch_mlp(5)
    model = kiln_mlp(old)
    compiled = kiln.compile(lambda x: model(x), session=session)
    assert_close(compiled(X), reference_of(lambda m, x: m(x), old, X))
    model.load_state_dict(new.state_dict())
    assert_close(compiled(X), reference_of(lambda m, x: m(x), new, X))
    model[2].bias = np.zeros(2, np.float32)  # a plain attribute assignment too
    with torch.no_grad():
        new[2].bias.zero_()
    assert_close(compiled(X), reference_of(lambda m, x: m(x), new, X))


def test_a_compiled_modules_parameters_replaced_on_the_module_take_effect(session):
    """kiln.compile(module): load_state_dict on the module itself (not through the wrapper) is seen
    at the next call, not served from the weights bound when it was compiled."""
    old, new = torch_mlp(6), torch_mlp(7)
    model = kiln_mlp(old)
    compiled = kiln.compile(model, session=session)
    assert_close(compiled(X), reference_of(lambda m, x: m(x), old, X))
    model.load_state_dict(new.state_dict())
    assert_close(compiled(X), reference_of(lambda m, x: m(x), new, X))


def test_a_module_in_a_dynamic_function_serves_every_batch_size(session):
    reference = torch_mlp(8)
    model = kiln_mlp(reference)
    compiled = kiln.compile(lambda x: model(x), dynamic=True, session=session)
    for rows in (1, 5, 2):
        x = np.linspace(-2.0, 2.0, rows * 3, dtype=np.float32).reshape(rows, 3)
        assert_close(compiled(x), reference_of(lambda m, x: m(x), reference, x))
