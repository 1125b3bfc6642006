"""Embedding: rows of a table looked up by integer index."""

from .. import _kiln, _tree
from .. import functional as F
from ._checks import _check_factory, _check_positive, _unsupported
from .module import Module


class Embedding(Module):
    """weight [num_embeddings, embedding_dim], standard normal (row padding_idx zero); maps integer
    indices of any shape to indices.shape + [embedding_dim]."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        super().__init__()
        _check_factory("Embedding", device, dtype)
        _check_positive("Embedding", "num_embeddings", num_embeddings)
        _check_positive("Embedding", "embedding_dim", embedding_dim)
        if max_norm is not None:
            raise _unsupported("Embedding", "max_norm", max_norm, "kiln does not renormalise rows as it reads them")
        # scale_grad_by_freq, sparse and _freeze only shape gradients, which kiln never computes.
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise _tree.error("spec", f"Embedding: padding_idx {padding_idx} is outside [{-num_embeddings}, "
                                          f"{num_embeddings})")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        if _weight is not None:
            self.weight = _weight
        else:
            self.weight = self._initial_weight()

    def _initial_weight(self):
        weight = _kiln.Tensor.randn([self.num_embeddings, self.embedding_dim], 5)
        if self.padding_idx is None:
            return weight
        rows = F.arange(0.0, float(self.num_embeddings), 1.0, _kiln.DType.int64)
        is_padding = F.reshape(F.eq(rows, _kiln.Tensor(self.padding_idx)), [self.num_embeddings, 1])
        return F.masked_fill(weight, is_padding, 0.0)

    def forward(self, input):
        return F.embedding(input, self.weight)
