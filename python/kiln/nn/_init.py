"""torch's default parameter initialisation, from kiln's fixed seeds."""

import math

from .. import _kiln


def _uniform(shape, fan_in, seed):
    """torch's default Linear and Conv init range, ±1/sqrt(fan_in), from a fixed seed."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    return _kiln.Tensor.rand(list(shape), seed, -bound, bound)
