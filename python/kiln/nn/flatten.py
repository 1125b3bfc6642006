"""Flatten: axes joined into one."""

from .. import _tree
from .. import functional as F
from .module import Module


class Flatten(Module):
    """Joins axes start_dim..end_dim (inclusive) into one."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        shape = list(input.shape)
        rank = max(len(shape), 1)
        start, end = self.start_dim % rank, self.end_dim % rank
        if not (-rank <= self.start_dim < rank and -rank <= self.end_dim < rank) or start > end:
            raise _tree.error("shape", f"{self._describe()}: cannot flatten axes {self.start_dim}..{self.end_dim} of "
                                       f"an input of rank {len(shape)}")
        if start == end:
            return input
        return F.reshape(input, shape[:start] + [-1] + shape[end + 1:])
