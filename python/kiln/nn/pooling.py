"""Max, average and adaptive average pooling (NCHW)."""

from .. import functional as F
from ._checks import _pair, _static_size, _unsupported
from .module import Module


def _check_pool_options(layer, ceil_mode, dilation=1, return_indices=False):
    if ceil_mode:
        raise _unsupported(layer, "ceil_mode", ceil_mode, "kiln's pooling rounds the output size down")
    if dilation not in (1, (1, 1), [1, 1]):
        raise _unsupported(layer, "dilation", dilation, "kiln's pooling windows are dense")
    if return_indices:
        raise _unsupported(layer, "return_indices", return_indices, "kiln's pooling returns the values only")


class MaxPool2d(Module):
    """NCHW max pooling; padding never wins the max. stride defaults to kernel_size."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        _check_pool_options("MaxPool2d", ceil_mode, dilation, return_indices)
        self.kernel_size = _pair("MaxPool2d", "kernel_size", kernel_size)
        self.stride = self.kernel_size if stride is None else _pair("MaxPool2d", "stride", stride)
        self.padding = _pair("MaxPool2d", "padding", padding)

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding)


class AvgPool2d(Module):
    """NCHW average pooling; count_include_pad (torch's default True) divides by the whole window."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        _check_pool_options("AvgPool2d", ceil_mode)
        if divisor_override is not None:
            raise _unsupported("AvgPool2d", "divisor_override", divisor_override,
                               "kiln divides by the window (count_include_pad says which)")
        self.kernel_size = _pair("AvgPool2d", "kernel_size", kernel_size)
        self.stride = self.kernel_size if stride is None else _pair("AvgPool2d", "stride", stride)
        self.padding = _pair("AvgPool2d", "padding", padding)
        self.count_include_pad = bool(count_include_pad)

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.count_include_pad)


class AdaptiveAvgPool2d(Module):
    """NCHW adaptive average pooling to output_size: an int, or a pair whose None keeps that size."""

    def __init__(self, output_size):
        super().__init__()
        if isinstance(output_size, (tuple, list)) and len(output_size) == 2 and None in output_size:
            self.output_size = tuple(output_size)
        else:
            self.output_size = _pair("AdaptiveAvgPool2d", "output_size", output_size)

    def forward(self, input):
        why = "output_size None keeps the input's size, which must be static"
        size = [_static_size("AdaptiveAvgPool2d", input, axis, why) if s is None else s
                for axis, s in zip((-2, -1), self.output_size)]
        return F.adaptive_avg_pool2d(input, size)
