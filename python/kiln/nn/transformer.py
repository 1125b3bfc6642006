"""MultiheadAttention, TransformerEncoderLayer and TransformerEncoder, with torch's names."""

import copy
import math

from .. import _kiln, _tree
from .. import functional as F
from ._checks import _check_factory, _check_positive, _unsupported
from ._init import _uniform
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module, _as_tensor
from .normalization import LayerNorm


def _additive_mask(mask, what):
    """torch's attention masks as one added to the scores: a bool mask's True is -inf (not attended)."""
    mask = mask if isinstance(mask, _kiln.Tensor) else _as_tensor(mask)
    if mask.dtype == _kiln.DType.bool:
        return F.masked_fill(F.cast(mask, _kiln.DType.float32) * 0.0, mask, float("-inf"))
    if mask.dtype != _kiln.DType.float32:
        raise _tree.error("dtype", f"MultiheadAttention: {what} is bool or f32, got {mask.dtype}")
    return mask


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: in_proj_weight [3E, E] (or q/k/v_proj_weight when kdim or vdim
    differ from E), in_proj_bias [3E], out_proj a Linear(E, E). Inputs [L, N, E] (query) and
    [S, N, E] (key, value), [N, L, E] with batch_first, or unbatched [L, E]. forward returns
    (output, attention weights or None) as torch's."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        _check_factory("MultiheadAttention", device, dtype)
        _check_positive("MultiheadAttention", "embed_dim", embed_dim)
        _check_positive("MultiheadAttention", "num_heads", num_heads)
        if embed_dim % num_heads:
            raise _tree.error("spec", f"MultiheadAttention: embed_dim {embed_dim} must be divisible by num_heads "
                                      f"{num_heads}")
        if add_bias_kv:
            raise _unsupported("MultiheadAttention", "add_bias_kv", add_bias_kv, "kiln has no bias_k/bias_v rows")
        if add_zero_attn:
            raise _unsupported("MultiheadAttention", "add_zero_attn", add_zero_attn, "kiln adds no zero key")
        if not 0.0 <= dropout <= 1.0:
            raise _tree.error("spec", f"MultiheadAttention: dropout must be in [0, 1], got {dropout}")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _uniform([3 * embed_dim, embed_dim], embed_dim, 6)
        else:
            self.q_proj_weight = _uniform([embed_dim, embed_dim], embed_dim, 6)
            self.k_proj_weight = _uniform([embed_dim, self.kdim], self.kdim, 7)
            self.v_proj_weight = _uniform([embed_dim, self.vdim], self.vdim, 8)
        self.register_parameter("in_proj_bias", _kiln.Tensor.zeros([3 * embed_dim]) if bias else None)
        self.out_proj = Linear(embed_dim, embed_dim, bias)

    def _training_refusal(self):
        return f"attention weights are dropped at random (dropout={self.dropout})" if self.dropout > 0 else None

    def _projections(self, query, key, value):
        """q, k, v [N, *, E], each from its rows of the packed projection (one matmul for self-attention)."""
        E = self.embed_dim
        bias = self.in_proj_bias
        biases = [None] * 3 if bias is None else F.split(bias, [E, E, E], 0)
        if not self._qkv_same_embed_dim:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
            return [F.linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases)]
        if query is key and key is value:
            return F.split(F.linear(query, self.in_proj_weight, bias), [E, E, E], -1)
        weights = F.split(self.in_proj_weight, [E, E, E], 0)
        return [F.linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases)]

    def _split_heads(self, x):
        """[N, L, E] -> [N, heads, L, head_dim]"""
        n, length = x.shape[0], x.shape[1]
        return F.permute(F.reshape(x, [n, length, self.num_heads, self.head_dim]), [0, 2, 1, 3])

    def _mask(self, attn_mask, key_padding_mask, n):
        """The additive mask [N or 1, heads or 1, L, S], or None."""
        mask = None
        if attn_mask is not None:
            mask = _additive_mask(attn_mask, "attn_mask")
            if mask.rank == 3:  # [N * heads, L, S]
                mask = F.reshape(mask, [n, self.num_heads, mask.shape[1], mask.shape[2]])
        if key_padding_mask is not None:
            padding = _additive_mask(key_padding_mask, "key_padding_mask")
            padding = F.reshape(padding, [n, 1, 1, padding.shape[-1]])
            mask = padding if mask is None else mask + padding
        return mask

    def _attend_with_weights(self, q, k, v, mask, causal):
        """softmax(q kᵀ / sqrt(head_dim) + mask) v, and the weights [N, heads, L, S] themselves."""
        scores = F.matmul(q, F.transpose(k, -2, -1)) * (1.0 / math.sqrt(self.head_dim))
        if causal:  # key j > query i is not attended
            mask = F.triu(F.full([scores.shape[-2], scores.shape[-1]], float("-inf")), 1)
        weights = F.softmax(scores if mask is None else scores + mask, -1)
        return F.matmul(weights, v), weights

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        self._refuse_training()
        unbatched = query.rank == 2
        expected = "[seq, E]" if unbatched else "[batch, seq, E]" if self.batch_first else "[seq, batch, E]"
        for role, x in (("query", query), ("key", key), ("value", value)):
            if x.rank != (2 if unbatched else 3):
                raise _tree.error("shape", f"{self._describe()}: {role} must be {expected}, got {x.shape}")

        def batch_major(x):
            if unbatched:
                return F.unsqueeze(x, 0)
            return x if self.batch_first else F.transpose(x, 0, 1)

        same = query is key and key is value
        q_in = batch_major(query)
        k_in, v_in = (q_in, q_in) if same else (batch_major(key), batch_major(value))
        if unbatched and key_padding_mask is not None:
            key_padding_mask = F.unsqueeze(key_padding_mask, 0)
        q, k, v = (self._split_heads(t) for t in self._projections(q_in, k_in, v_in))
        n = q_in.shape[0]
        mask = self._mask(attn_mask, key_padding_mask, n)
        causal = is_causal and mask is None
        weights = None
        if need_weights:
            context, weights = self._attend_with_weights(q, k, v, mask, causal)
            if average_attn_weights:
                weights = F.mean(weights, 1)
            if unbatched:
                weights = F.squeeze(weights, 0)
        else:  # one op, which the JIT runs blockwise without the [L, S] weights
            context = F.scaled_dot_product_attention(q, k, v, mask, causal)
        context = F.transpose(context, 1, 2)  # [N, L, heads, head_dim]
        output = self.out_proj(F.reshape(context, [n, context.shape[1], self.embed_dim]))
        if unbatched:
            output = F.squeeze(output, 0)
        elif not self.batch_first:
            output = F.transpose(output, 0, 1)
        return output, weights


def _activation(name_or_fn):
    if callable(name_or_fn):
        return name_or_fn
    functions = {"relu": F.relu, "gelu": F.gelu}
    if name_or_fn not in functions:
        raise _unsupported("TransformerEncoderLayer", "activation", name_or_fn,
                           'it is "relu", "gelu" or a callable')
    return functions[name_or_fn]


class TransformerEncoderLayer(Module):
    """torch.nn.TransformerEncoderLayer: self_attn, linear1, linear2, norm1, norm2 and dropouts under
    torch's names; post-norm unless norm_first."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        _check_factory("TransformerEncoderLayer", device, dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _clone(module):
    """A deep copy whose tensors are copies too (kiln Tensors do not pickle)."""
    memo = {}
    for m in module.modules():
        for table in (m._parameters, m._buffers):
            for value in table.values():
                if value is not None:
                    memo[id(value)] = value.clone()
    return copy.deepcopy(module, memo)


class TransformerEncoder(Module):
    """torch.nn.TransformerEncoder: num_layers copies of encoder_layer in layers, then norm if given."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        _check_positive("TransformerEncoder", "num_layers", num_layers)
        self.layers = ModuleList([_clone(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                           is_causal=bool(is_causal))
        return output if self.norm is None else self.norm(output)
