"""BatchNorm2d, GroupNorm, InstanceNorm2d, LayerNorm and RMSNorm."""

import math

from .. import _kiln, _tree
from .. import functional as F
from ._checks import _check_factory, _check_positive
from .module import Module


class _NormBase(Module):
    """What BatchNorm2d and InstanceNorm2d share, as torch's _NormBase: per-channel weight and bias
    when affine, the running_mean and running_var buffers when track_running_stats, and
    num_batches_tracked accepted by load_state_dict and dropped (inference never reads it)."""

    def __init__(self, layer, num_features, eps, momentum, affine, track_running_stats, device, dtype):
        super().__init__()
        _check_factory(layer, device, dtype)
        _check_positive(layer, "num_features", num_features)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.register_parameter("weight", _kiln.Tensor.ones([num_features]) if affine else None)
        self.register_parameter("bias", _kiln.Tensor.zeros([num_features]) if affine else None)
        self.register_buffer("running_mean", _kiln.Tensor.zeros([num_features]) if track_running_stats else None)
        self.register_buffer("running_var", _kiln.Tensor.ones([num_features]) if track_running_stats else None)
        self._ignored_when_loading.add("num_batches_tracked")


class BatchNorm2d(_NormBase):
    """NCHW batch normalisation. With track_running_stats (the default), eval mode normalises with the
    buffers running_mean and running_var, and training mode (which would update them) is refused;
    without, both modes use the batch's statistics, as torch's. num_batches_tracked is accepted by
    load_state_dict and dropped (inference never reads it)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None):
        super().__init__("BatchNorm2d", num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def _training_refusal(self):
        return "batch normalisation updates its running statistics" if self.track_running_stats else None

    def forward(self, input):
        if input.rank != 4:
            raise _tree.error("shape", f"{self._describe()}: expected an NCHW input of rank 4, got {input.shape}")
        if self.track_running_stats:
            self._refuse_training()
            mean, var = self.running_mean, self.running_var
        else:
            mean, var = F.mean(input, [0, 2, 3]), F.var(input, [0, 2, 3], correction=0)
        return F.batch_norm(input, mean, var, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_features}, eps={self.eps}, affine={self.affine}"


class GroupNorm(Module):
    """Normalises each sample's groups of num_channels / num_groups channels; weight 1, bias 0."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        _check_factory("GroupNorm", device, dtype)
        _check_positive("GroupNorm", "num_groups", num_groups)
        _check_positive("GroupNorm", "num_channels", num_channels)
        if num_channels % num_groups:
            raise _tree.error("spec", f"GroupNorm: num_channels {num_channels} must be divisible by num_groups "
                                      f"{num_groups}")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.register_parameter("weight", _kiln.Tensor.ones([num_channels]) if affine else None)
        self.register_parameter("bias", _kiln.Tensor.zeros([num_channels]) if affine else None)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)


class InstanceNorm2d(_NormBase):
    """Normalises each sample's channels over H and W. With track_running_stats, eval mode uses the
    buffers running_mean and running_var (training mode, which updates them, is refused)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None):
        super().__init__("InstanceNorm2d", num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def _training_refusal(self):
        return "instance normalisation updates its running statistics" if self.track_running_stats else None

    def forward(self, input):
        unbatched = input.rank == 3
        x = F.unsqueeze(input, 0) if unbatched else input
        if x.rank != 4:
            raise _tree.error("shape", f"{self._describe()}: expected a CHW or NCHW input, got {input.shape}")
        if self.track_running_stats:
            self._refuse_training()
            y = F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, self.eps)
        else:
            y = F.instance_norm(x, self.weight, self.bias, self.eps)
        return F.squeeze(y, 0) if unbatched else y


def _normalized_shape(layer, normalized_shape):
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    if not shape:
        raise _tree.error("spec", f"{layer}: normalized_shape needs at least one size")
    for size in shape:
        _check_positive(layer, "each size of normalized_shape", size)
    return tuple(shape)


def _over_trailing_axes(module, input, normalized_shape, norm, *weights):
    """norm(x, *weights) over the last axis, with the trailing normalized_shape axes made one."""
    if len(normalized_shape) == 1:
        return norm(input, *weights)
    shape = list(input.shape)
    kept = len(shape) - len(normalized_shape)
    if kept < 0 or tuple(shape[kept:]) != normalized_shape:
        raise _tree.error("shape", f"{module._describe()}: input {shape} does not end in normalized_shape "
                                   f"{list(normalized_shape)}")
    width = math.prod(normalized_shape)
    flat = [None if w is None else F.reshape(w, [width]) for w in weights]
    return F.reshape(norm(F.reshape(input, shape[:kept] + [width]), *flat), shape)


class LayerNorm(Module):
    """Normalises over the trailing normalized_shape axes; weight and bias of that shape."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        _check_factory("LayerNorm", device, dtype)
        self.normalized_shape = _normalized_shape("LayerNorm", normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.register_parameter("weight", _kiln.Tensor.ones(list(self.normalized_shape)) if elementwise_affine
                                else None)
        self.register_parameter("bias", _kiln.Tensor.zeros(list(self.normalized_shape)) if elementwise_affine and bias
                                else None)

    def forward(self, input):
        return _over_trailing_axes(self, input, self.normalized_shape,
                                   lambda x, w, b: F.layer_norm(x, w, b, self.eps), self.weight, self.bias)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


# torch.finfo(dtype).eps: RMSNorm's eps when none is given.
_MACHINE_EPSILON = {_kiln.DType.float64: 2.0 ** -52, _kiln.DType.float16: 2.0 ** -10, _kiln.DType.bfloat16: 2.0 ** -7}


class RMSNorm(Module):
    """x / sqrt(mean(x², trailing axes) + eps) * weight; eps None is the input dtype's machine epsilon."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        _check_factory("RMSNorm", device, dtype)
        self.normalized_shape = _normalized_shape("RMSNorm", normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.register_parameter("weight", _kiln.Tensor.ones(list(self.normalized_shape)) if elementwise_affine
                                else None)

    def forward(self, input):
        eps = self.eps if self.eps is not None else _MACHINE_EPSILON.get(input.dtype, 2.0 ** -23)
        return _over_trailing_axes(self, input, self.normalized_shape, lambda x, w: F.rms_norm(x, w, eps),
                                   self.weight)
