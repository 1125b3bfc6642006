"""The C++ debugger over a compiled callable: step a call op by op (pdb's step, next, continue and
where, breakpoints and NaN/Inf watchpoints), find the first op where the tiers disagree, summarise
a tensor."""

from . import _kiln

StepState = _kiln.debug.StepState
StackFrame = _kiln.debug.StackFrame
TierDifference = _kiln.debug.TierDifference
TensorSummary = _kiln.debug.TensorSummary
summary = _kiln.debug.summary

__all__ = ["Stepper", "compare_tiers", "summary", "StepState", "StackFrame", "TierDifference", "TensorSummary"]


def _core(callable_):
    core = getattr(callable_, "_core", None)
    if core is None:
        raise TypeError("expected a callable from kiln.compilation.compile")
    return core


def _tensors(inputs):
    return [_kiln.Tensor(x) for x in inputs]


class Stepper(_kiln.debug._Stepper):
    """Steps one call of `callable_` with `inputs` (one tensor per argument), on the interpreter's
    kernels (tier="interp") or replaying the JIT tier's call (tier="jit")."""

    def __init__(self, callable_, inputs, tier="interp", keep_all=False):
        super().__init__(_core(callable_), _tensors(inputs), tier, keep_all)


def compare_tiers(callable_, inputs, tolerance=1e-4):
    """The first op whose result differs between the tiers beyond tolerance * (1 + |interp|), or None."""
    return _kiln.debug._compare_tiers(_core(callable_), _tensors(inputs), tolerance)
