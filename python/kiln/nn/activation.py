"""Elementwise activations and softmax."""

from .. import _tree
from .. import functional as F
from .module import Module


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace  # kiln never writes into its input; the result is the same

    def forward(self, input):
        return F.relu(input)


class ReLU6(ReLU):
    """min(max(x, 0), 6)."""

    def forward(self, input):
        return F.clamp(input, 0.0, 6.0)


class SiLU(ReLU):
    def forward(self, input):
        return F.silu(input)


class Hardsigmoid(ReLU):
    """relu6(x + 3) / 6."""

    def forward(self, input):
        return F.hardsigmoid(input)


class Hardswish(ReLU):
    """x * relu6(x + 3) / 6."""

    def forward(self, input):
        return F.hardswish(input)


class GELU(Module):
    """approximate: "none" (the erf form) or "tanh"."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise _tree.error("spec", f'GELU: approximate is "none" or "tanh", got {approximate!r}')
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, self.approximate)


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope)


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha)


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)


def _softmax_dim(dim, rank):
    """torch's implicit softmax dim for dim=None (a legacy rule torch warns about)."""
    if dim is not None:
        return dim
    return 0 if rank in (0, 1, 3) else 1


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, _softmax_dim(self.dim, input.rank))


class LogSoftmax(Softmax):
    def forward(self, input):
        return F.log_softmax(input, _softmax_dim(self.dim, input.rank))
