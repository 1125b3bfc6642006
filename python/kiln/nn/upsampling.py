"""Upsample and its fixed-mode forms (NCHW)."""

import math

from .. import _tree
from .. import functional as F
from ._checks import _pair, _static_size, _unsupported
from .module import Module


class Upsample(Module):
    """NCHW nearest or bilinear resampling, by size or scale_factor (exactly one)."""

    _modes = ("nearest", "bilinear")

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None):
        super().__init__()
        name = type(self).__name__
        if mode not in self._modes:
            raise _unsupported(name, "mode", mode, f"kiln resamples with {' or '.join(self._modes)}")
        if align_corners is not None and mode == "nearest":
            raise _unsupported(name, "align_corners", align_corners, "as in torch, only the interpolating modes "
                                                                     "take it")
        if (size is None) == (scale_factor is None):
            raise _tree.error("spec", f"{name}: give exactly one of size and scale_factor")
        self.size = None if size is None else _pair(name, "size", size)
        self.scale_factor = scale_factor
        self.mode = mode
        self.align_corners = bool(align_corners)
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        if self.size is not None:
            return F.interpolate(input, self.size, None, self.mode, self.align_corners)
        scales = (list(self.scale_factor) if isinstance(self.scale_factor, (tuple, list))
                  else [float(self.scale_factor)] * 2)
        if not self.recompute_scale_factor:
            return F.interpolate(input, None, scales, self.mode, self.align_corners)
        # torch then maps coordinates by in / out, which is what giving the size does.
        why = "recompute_scale_factor needs static spatial sizes"
        size = [math.floor(_static_size("Upsample", input, axis, why) * s) for axis, s in zip((-2, -1), scales)]
        return F.interpolate(input, size, None, self.mode, self.align_corners)


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "bilinear", align_corners=True)
