"""kiln.compile(module) returns a wrapper a torch user can treat as the module (as torch.compile's
OptimizedModule): the module API by delegation, eval()/train()/to() returning the wrapper,
load_state_dict with strict and torch's IncompatibleKeys; what kiln cannot do is refused by name."""
import numpy as np
import pytest

import kiln
from kiln import nn

torch = pytest.importorskip("torch", reason="torch's dtypes and devices are passed as torch users pass them")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.fc(x))


X = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)


def naive_linear(linear, x):
    return x @ np.asarray(linear.weight).T + np.asarray(linear.bias)


def test_load_state_dict_takes_strict_and_returns_incompatible_keys():
    model = Net().eval()
    compiled = kiln.compile(model, session=kiln.Session(mode="off"))
    compiled(X)
    state = {"fc.weight": np.full((4, 3), 0.5, np.float32), "extra": np.zeros(1, np.float32)}
    with pytest.raises(kiln.Error, match=r"missing \['fc.bias'.*unexpected \['extra'\]"):
        compiled.load_state_dict(state)
    result = compiled.load_state_dict(state, strict=False)
    assert isinstance(result, nn.IncompatibleKeys)
    assert result.missing_keys == ["fc.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"]
    assert result.unexpected_keys == ["extra"]
    np.testing.assert_allclose(np.asarray(compiled(X)), naive_linear(model.fc, X), rtol=1e-6)
    assert repr(compiled.load_state_dict(model.state_dict())) == "<All keys matched successfully>"


def test_eval_and_train_set_the_modules_mode_and_return_the_wrapper():
    model = Net()
    compiled = kiln.compile(model, session=kiln.Session(mode="off"))
    assert compiled.training and compiled.eval() is compiled and not model.drop.training
    assert not compiled.training
    compiled(X)
    assert compiled.train() is compiled and model.drop.training
    with pytest.raises(kiln.Error, match="module 'bn' \\(BatchNorm2d\\) is in training mode"):
        compiled(X)
    assert compiled.train(False) is compiled and not model.fc.training


def test_the_module_api_is_the_modules():
    model = Net().eval()
    compiled = kiln.compile(model)
    assert list(compiled.named_parameters(prefix="net")) == list(model.named_parameters(prefix="net"))
    assert [name for name, _ in compiled.named_buffers()] == ["bn.running_mean", "bn.running_var"]
    assert compiled.buffers() == model.buffers() and compiled.parameters() == model.parameters()
    assert [name for name, _ in compiled.named_modules()] == ["", "fc", "bn", "drop"]
    assert list(compiled.children()) == [model.fc, model.bn, model.drop]
    assert compiled.get_submodule("bn") is model.bn and compiled.fc is model.fc
    assert list(compiled.state_dict(prefix="m.")) == list(model.state_dict(prefix="m."))
    assert compiled.apply(lambda m: None) is compiled
    assert "Linear(in_features=3, out_features=4" in repr(compiled)


def test_forward_runs_the_compiled_graph():
    model = Net().eval()
    compiled = kiln.compile(model, session=kiln.Session(mode="off"))
    np.testing.assert_allclose(np.asarray(compiled.forward(X)), naive_linear(model.fc, X), rtol=1e-6)
    assert compiled.stats().misses == 1


def test_a_submodule_assigned_through_the_wrapper_serves_the_next_call():
    model = Net().eval()
    compiled = kiln.compile(model, session=kiln.Session(mode="off"))
    compiled(X)
    compiled.fc = nn.Linear(3, 4, seed=7)
    assert model.fc is compiled.fc
    np.testing.assert_allclose(np.asarray(compiled(X)), naive_linear(compiled.fc, X), rtol=1e-6)


@pytest.mark.parametrize("move", [
    lambda m: m.to("cpu"),
    lambda m: m.to(torch.device("cpu")),
    lambda m: m.to(torch.float32),
    lambda m: m.to("cpu", torch.float32),
    lambda m: m.to(device=kiln.CPU(), dtype=kiln.DType.float32),
    lambda m: m.cpu(),
    lambda m: m.float(),
    lambda m: m.requires_grad_(False),
])
def test_moves_to_where_the_module_already_is_return_the_wrapper(move):
    compiled = kiln.compile(Net().eval())
    assert move(compiled) is compiled
    model = Net()
    assert move(model) is model


@pytest.mark.parametrize("move, what", [
    (lambda m: m.to("cuda"), "to: device='cuda' is not supported"),
    (lambda m: m.to(torch.float16), "to: dtype=torch.float16 is not supported"),
    (lambda m: m.cuda(), "cuda() is not supported"),
    (lambda m: m.half(), "half() is not supported"),
    (lambda m: m.double(), "double() is not supported"),
    (lambda m: m.bfloat16(), "bfloat16() is not supported"),
    (lambda m: m.requires_grad_(), "requires_grad_: requires_grad=True is not supported"),
])
def test_moves_kiln_cannot_make_are_refused_by_name(move, what):
    for target in (Net(), kiln.compile(Net())):
        with pytest.raises(kiln.Error, match=what.replace("(", r"\(").replace(")", r"\)")):
            move(target)


def test_float_refuses_a_module_holding_other_dtypes():
    model = nn.Sequential(nn.Linear(2, 2))
    model[0].weight = np.ones((2, 2), np.float64)  # an attribute takes any dtype (load_state_dict keeps it)
    for convert in (lambda m: m.float(), lambda m: m.to(torch.float32)):
        with pytest.raises(kiln.Error, match="'0.weight' is float64 and kiln does not convert"):
            convert(model)


def test_an_attribute_neither_has_is_an_attribute_error_naming_it():
    compiled = kiln.compile(Net())
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'zero_grad'"):
        compiled.zero_grad()
