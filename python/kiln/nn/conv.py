"""Conv1d ([N, C, L]), Conv2d and ConvTranspose2d (NCHW)."""

import math

from .. import _tree
from .. import functional as F
from ._checks import _check_factory, _check_padding_mode, _check_positive, _pair, _single, _unsupported
from ._init import _uniform
from .module import Module


def _check_conv(layer, in_channels, out_channels, groups, padding_mode, device, dtype):
    """The constructor checks the convolutions share."""
    _check_factory(layer, device, dtype)
    _check_padding_mode(layer, padding_mode)
    for argument, value in (("in_channels", in_channels), ("out_channels", out_channels), ("groups", groups)):
        _check_positive(layer, argument, value)
    if in_channels % groups or out_channels % groups:
        raise _tree.error("spec", f"{layer}: in_channels {in_channels} and out_channels {out_channels} must be "
                                  f"divisible by groups {groups}")


def _same_padding(layer, kernel_size, stride, dilation, padding):
    """(before, after) per spatial axis for the string forms; None for explicit padding."""
    if not isinstance(padding, str):
        return None
    if padding == "valid":
        return (0, 0) * len(kernel_size)
    if padding != "same":
        raise _unsupported(layer, "padding", padding, 'padding is an int, a tuple of ints, "valid" or "same"')
    if any(s != 1 for s in stride):
        raise _unsupported(layer, "padding", padding, f"torch allows it only with stride 1, got {stride}")
    pads = ()
    for k, d in zip(kernel_size, dilation):
        total = d * (k - 1)
        pads += (total // 2, total - total // 2)  # torch puts the odd one at the end
    return pads


class _ConvNd(Module):
    """What Conv1d and Conv2d share: their checks, sizes per spatial axis (`to_tuple` makes them),
    string padding and torch's initialisation."""

    def __init__(self, layer, to_tuple, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                 bias, padding_mode, device, dtype):
        super().__init__()
        _check_conv(layer, in_channels, out_channels, groups, padding_mode, device, dtype)
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = to_tuple(layer, "kernel_size", kernel_size)
        self.stride = to_tuple(layer, "stride", stride)
        self.dilation = to_tuple(layer, "dilation", dilation)
        self.padding = padding if isinstance(padding, str) else to_tuple(layer, "padding", padding)
        self._pads = _same_padding(layer, self.kernel_size, self.stride, self.dilation, padding)
        fan_in = in_channels // groups * math.prod(self.kernel_size)
        self.weight = _uniform([out_channels, in_channels // groups, *self.kernel_size], fan_in, 3)
        self.register_parameter("bias", _uniform([out_channels], fan_in, 4) if bias else None)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, groups={self.groups}")


class Conv1d(_ConvNd):
    """[N, C, L]; weight [out_channels, in_channels / groups, kernel_size], bias [out_channels]. padding is
    an int, "valid" or "same" (stride 1); zero padding only."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__("Conv1d", _single, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype)

    def forward(self, input):
        if self._pads is None:
            return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        left, right = self._pads
        if left == right:
            return F.conv1d(input, self.weight, self.bias, self.stride, left, self.dilation, self.groups)
        padded = F.pad(input, [0, 0, 0, 0, left, right])
        return F.conv1d(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """NCHW; weight [out_channels, in_channels / groups, kh, kw], bias [out_channels]. padding is an
    int, a pair, "valid" or "same" (stride 1); zero padding only."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__("Conv2d", _pair, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype)

    def forward(self, input):
        if self._pads is None:
            return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        top, bottom, left, right = self._pads
        if top == bottom and left == right:
            return F.conv2d(input, self.weight, self.bias, self.stride, (top, left), self.dilation, self.groups)
        padded = F.pad(input, [0, 0, 0, 0, top, bottom, left, right])
        return F.conv2d(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class ConvTranspose2d(Module):
    """NCHW; weight [in_channels, out_channels / groups, kh, kw], bias [out_channels]; zero padding."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        _check_conv("ConvTranspose2d", in_channels, out_channels, groups, padding_mode, device, dtype)
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _pair("ConvTranspose2d", "kernel_size", kernel_size)
        self.stride = _pair("ConvTranspose2d", "stride", stride)
        self.padding = _pair("ConvTranspose2d", "padding", padding)
        self.output_padding = _pair("ConvTranspose2d", "output_padding", output_padding)
        self.dilation = _pair("ConvTranspose2d", "dilation", dilation)
        fan_in = out_channels // groups * self.kernel_size[0] * self.kernel_size[1]
        self.weight = _uniform([in_channels, out_channels // groups, *self.kernel_size], fan_in, 3)
        self.register_parameter("bias", _uniform([out_channels], fan_in, 4) if bias else None)

    def forward(self, input, output_size=None):
        if output_size is not None:
            raise _unsupported("ConvTranspose2d.forward", "output_size", output_size,
                               "set output_padding in the constructor instead")
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)
