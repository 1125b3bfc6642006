"""Dropout: the identity in eval mode."""

from .. import _tree
from .module import Module


class Dropout(Module):
    """The identity in eval mode; training mode with p > 0 (random zeroing) is refused."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise _tree.error("spec", f"Dropout: probability must be in [0, 1], got {p}")
        self.p, self.inplace = p, inplace

    def _training_refusal(self):
        return f"dropout zeroes elements at random (p={self.p})" if self.p > 0 else None

    def forward(self, input):
        self._refuse_training()
        return input

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"
