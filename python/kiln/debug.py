"""The C++ debugger over a compiled callable: step a call op by op (pdb's step, next, continue and
where, breakpoints and NaN/Inf watchpoints), find the first op where the tiers disagree, summarise
a tensor."""

from . import _kiln
from . import _tree
from ._jit import JitFunction

StepState = _kiln.debug.StepState
StackFrame = _kiln.debug.StackFrame
TierDifference = _kiln.debug.TierDifference
TensorSummary = _kiln.debug.TensorSummary
summary = _kiln.debug.summary

__all__ = ["Stepper", "compare_tiers", "summary", "StepState", "StackFrame", "TierDifference", "TensorSummary"]


def _core(callable_, inputs):
    """The C++ callable a call with `inputs` runs: a kiln.compilation callable's own; for one from
    kiln.compile (a function, or a module whose forward is one), the trace cache's entry for their
    signature, traced now as the call would trace it, without running it."""
    core = getattr(callable_, "_core", None)
    if core is not None:
        return core
    jit = getattr(callable_, "_forward", callable_)
    if not isinstance(jit, JitFunction):
        raise TypeError(f"expected a compiled callable (from kiln.compile or kiln.compilation.compile), "
                        f"got {type(callable_).__name__}")
    args = tuple(inputs)
    leaves, tensors = _tree.flatten_args(args)
    entry = jit._entry(leaves, tensors, args, count_hit=False)
    if entry is None:
        raise RuntimeError(f"{jit._name} has reached its recompile limit: calls with a new signature run eagerly, "
                           "with no graph to step; raise recompile_limit or step a signature it has compiled")
    return entry.core


def _tensors(inputs):
    return [_kiln.Tensor(x) for x in inputs]


class Stepper(_kiln.debug._Stepper):
    """Steps one call of `callable_` (from kiln.compile or kiln.compilation.compile) with `inputs`
    (one tensor per argument), on the interpreter's kernels (tier="interp") or replaying the JIT
    tier's call (tier="jit"). Values are named as the staged graph prints them: "%4", and
    "@block %4" inside a subgraph @block."""

    def __init__(self, callable_, inputs, tier="interp", keep_all=False):
        tensors = _tensors(inputs)
        super().__init__(_core(callable_, tensors), tensors, tier, keep_all)


def compare_tiers(callable_, inputs, tolerance=1e-4, tier=""):
    """The first op whose result differs between the interpreter and `tier` ("jit" or "accelerator";
    "": the tier the callable promotes to) beyond tolerance * (1 + |interp|), or None."""
    tensors = _tensors(inputs)
    return _kiln.debug._compare_tiers(_core(callable_, tensors), tensors, tolerance, tier)
