"""lucid's compile(module_or_fn, dynamic): trace at the first call with each new signature,
through kiln's C++ trace cache (entries, dynamic dims, the recompile limit, logs)."""

import threading
import time

from . import _kiln
from . import _tree

_tracing = threading.local()


def tracing_module():
    """True while a CompiledModule traces on this thread: parameters read as weights then."""
    return getattr(_tracing, "depth", 0) > 0


class JitFunction:
    """A function compiled at call time. Thread-safe."""

    def __init__(self, fn, *, dynamic=None, recompile_limit=8, capacity=32, fail_on_recompile=False, name="",
                 weights=None, session=None):
        self._fn = fn
        self._name = name or getattr(fn, "__name__", "fn")
        if not self._name.isidentifier():
            self._name = "fn"
        session = session if session is not None else _kiln.Session.default()
        self._cache = _kiln._TraceCache(dynamic, recompile_limit, capacity, fail_on_recompile, self._name,
                                        dict(weights or {}), session)
        self._session = session
        self.__wrapped__ = fn
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args):
        leaves, tensors = _tree.flatten_args(args)
        if any(t.is_symbolic for t in tensors):  # inside another trace: trace into it
            return self._fn(*args)
        decision = self._cache.decide(leaves, tensors)
        if decision.eager:
            return self._fn(*args)
        entry = decision.entry
        if entry is not None:
            self._cache.count_hit(entry)
        else:
            entry = self._trace(leaves, tensors, decision, args)
        # The arguments are flattened once, for the cache and the call alike.
        return _tree.rebuild(entry.result_template, entry.core.call(leaves, tensors))

    def _trace(self, leaves, tensors, decision, args):
        start = time.perf_counter()
        layouts = decision.layouts
        try:
            traced = self._traced(args, layouts)
        except _kiln.Error as e:
            if not decision.symbolic:
                raise
            layouts = self._cache.symbolic_trace_failed(str(e), tensors)
            traced = self._traced(args, layouts)
        module, spec_leaves, template = traced
        core = _kiln._CallableCore(module, spec_leaves, {}, self._name, [], True, self._session)
        ms = (time.perf_counter() - start) * 1e3
        return self._cache.insert(leaves, tensors, layouts, template, core, ms)

    def _traced(self, args, layouts):
        specs = _tree.replace_tensors(args, layouts)
        _tracing.depth = getattr(_tracing, "depth", 0) + 1
        try:
            return _tree.trace(self._fn, specs, self._name)
        finally:
            _tracing.depth -= 1

    def stats(self):
        return self._cache.stats()

    def clear_cache(self):
        self._cache.clear()

    def set_fail_on_recompile(self, on):
        self._cache.set_fail_on_recompile(on)


class CompiledModule:
    """A module compiled at call time, delegating parameters(), state_dict() and load_state_dict().

    Its parameters are the weights of its own session under their dotted names; load_state_dict
    sets new versions there, so later calls use them."""

    def __init__(self, module, **options):
        self._module = module
        module._set_prefixes()
        self._session = options.pop("session", None) or _kiln.Session()
        for name, value in module.state_dict().items():
            self._session.set_weight(name, value)
        options.setdefault("name", type(module).__name__)
        self._forward = JitFunction(module, session=self._session, **options)

    def __call__(self, *args):
        self._module._check_modes()  # a graph traced in eval mode must not serve a later .train()
        return self._forward(*args)

    @property
    def module(self):
        return self._module

    def parameters(self):
        return self._module.parameters()

    def named_parameters(self):
        return self._module.named_parameters()

    def state_dict(self):
        return self._module.state_dict()

    def load_state_dict(self, state):
        self._module.load_state_dict(state)
        for name, value in self._module.state_dict().items():
            self._session.set_weight(name, value)

    def stats(self):
        return self._forward.stats()


def compile(module_or_fn=None, *, dynamic=None, **options):
    """lucid's compile: kiln.compile(module), kiln.compile(fn), @kiln.compile, @kiln.compile(dynamic=True).

    dynamic: None (automatic: sizes that change become symbolic at the second trace), True (dim 0
    of every tensor symbolic from the first trace) or False (one entry per shape)."""
    from .nn import Module

    def wrap(target):
        if isinstance(target, Module):
            return CompiledModule(target, dynamic=dynamic, **options)
        return JitFunction(target, dynamic=dynamic, **options)

    return wrap if module_or_fn is None else wrap(module_or_fn)
