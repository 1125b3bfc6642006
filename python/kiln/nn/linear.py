"""Identity and Linear."""

from .. import functional as F
from ._checks import _check_factory
from ._init import _uniform
from .module import Module


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments, as torch's."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x @ weight.T + bias; weight [out_features, in_features]. seed (kiln's) picks the init."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, seed=0):
        super().__init__()
        _check_factory("Linear", device, dtype)
        self.in_features, self.out_features = in_features, out_features
        self.weight = _uniform([out_features, in_features], in_features, seed)
        self.register_parameter("bias", _uniform([out_features], in_features, seed + 1) if bias else None)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
