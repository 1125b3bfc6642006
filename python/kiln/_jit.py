"""lucid's compile(module_or_fn, dynamic): trace at the first call with each new signature,
through kiln's C++ trace cache (entries, dynamic dims, the recompile limit, logs)."""

import functools
import inspect
import threading
import time

from . import _kiln
from . import _tree
from ._module_weights import ModuleWeights

_tracing = threading.local()


def tracing_weights():
    """The ModuleWeights of the callable tracing on this thread, or None: while it traces, kiln.nn
    modules read their parameters and buffers as its session's weights."""
    stack = getattr(_tracing, "weights", None)
    return stack[-1] if stack else None


class JitFunction:
    """A function compiled at call time. Thread-safe.

    Every keyword takes effect: dynamic, recompile_limit, capacity and fail_on_recompile steer the
    trace cache; name names the graphs (default: after fn); weights are looked up before the
    session's registry; custom_extensions and allow_subgraphs apply to each trace; session holds
    the tiers and the registry (default: kiln.Session.default()).

    kiln.nn modules fn calls are bound by name in the session, not copied into the graph: their
    tensors replaced later (load_state_dict) are used from the next call on (see ModuleWeights)."""

    def __init__(self, fn, *, dynamic=None, recompile_limit=8, capacity=32, fail_on_recompile=False, name="",
                 weights=None, session=None, custom_extensions=(), allow_subgraphs=True):
        self._fn = fn
        self._name = _tree.graph_name(fn, name, default="fn")
        self._weights = dict(weights or {})
        self._custom_extensions = list(custom_extensions)
        self._allow_subgraphs = allow_subgraphs
        session = session if session is not None else _kiln.Session.default()
        self._cache = _kiln._TraceCache(dynamic, recompile_limit, capacity, fail_on_recompile, self._name,
                                        self._weights, session)
        self._session = session
        self._module_weights = ModuleWeights(session)
        self.__wrapped__ = fn
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args):
        leaves, tensors = _tree.flatten_args(args)
        if any(t.is_symbolic for t in tensors):  # inside another trace: trace into it
            return self._fn(*args)
        entry = self._entry(leaves, tensors, args)
        if entry is None:  # past the recompile limit
            return self._fn(*args)
        # The arguments are flattened once, for the cache and the call alike.
        return _tree.rebuild(entry.result_template, entry.core.call(leaves, tensors))

    def _entry(self, leaves, tensors, args, count_hit=True):
        """The cache entry serving these arguments, traced now if none does (without running it);
        None when they are to run eagerly, past the recompile limit."""
        self._module_weights.sync()
        decision = self._cache.decide(leaves, tensors)
        try:
            if decision.eager:
                return None
            if decision.entry is None:
                return self._trace(leaves, tensors, decision.layouts, decision.symbolic, args)
            if count_hit:
                self._cache.count_hit(decision.entry)
            return decision.entry
        finally:
            # The decision marks this signature as being traced until it is freed: a traceback
            # that kept it (pytest.raises, the REPL's sys.last_traceback) would make the next call
            # with this signature wait for that trace forever.
            decision = None

    def _trace(self, leaves, tensors, layouts, symbolic, args):
        start = time.perf_counter()
        try:
            traced = self._traced(args, layouts)
        except _kiln.Error as e:
            if not symbolic:
                raise
            layouts = self._cache.symbolic_trace_failed(e, tensors)
            traced = self._traced(args, layouts)
        module, spec_leaves, template = traced
        core = _kiln._CallableCore(module, spec_leaves, self._weights, self._name, self._custom_extensions,
                                   self._allow_subgraphs, self._session)
        ms = (time.perf_counter() - start) * 1e3
        return self._cache.insert(leaves, tensors, layouts, template, core, ms)

    def _traced(self, args, layouts):
        specs = _tree.replace_tensors(args, layouts)
        stack = _tracing.__dict__.setdefault("weights", [])
        stack.append(self._module_weights)
        try:
            return _tree.trace(self._fn, specs, self._name, self._allow_subgraphs, self._custom_extensions)
        finally:
            stack.pop()

    @property
    def session(self):
        """The kiln.Session whose tiers, executable cache and weight registry the entries use."""
        return self._session

    def stats(self):
        return self._cache.stats()

    def clear_cache(self):
        self._cache.clear()

    def set_fail_on_recompile(self, on):
        self._cache.set_fail_on_recompile(on)

    # lucid: a plain function has no parameters, so these are empty.
    def parameters(self):
        return []

    def named_parameters(self):
        return iter(())

    def state_dict(self):
        return {}


class CompiledModule:
    """A module compiled at call time, standing for the module as torch.compile's wrapper does:
    calls (and forward) run the compiled graph, and the rest of the module API is the module's,
    a method that returns the module returning this wrapper instead (compiled.eval() stays
    compiled). Attributes set on it are set on the module.

    Its parameters are the weights of its own session under their dotted names; a tensor replaced
    on the module (load_state_dict, assignment) is set there again before the next call."""

    def __init__(self, module, *, session=None, **options):
        object.__setattr__(self, "_module", module)
        module._set_prefixes()
        object.__setattr__(self, "_session", session if session is not None else _kiln.Session())
        object.__setattr__(self, "_forward", JitFunction(module, session=self._session, **options))
        self._forward._module_weights.add_root(module, "")

    def __call__(self, *args):
        self._module._check_modes()  # a graph traced in eval mode must not serve a later .train()
        return self._forward(*args)

    def forward(self, *args):
        return self(*args)

    @property
    def module(self):
        return self._module

    @property
    def session(self):
        """The kiln.Session holding this module's parameters as weights, and its tiers."""
        return self._session

    @property
    def training(self):
        return self._module.training

    def train(self, mode=True):
        self._module.train(mode)
        return self

    def eval(self):
        self._module.eval()
        return self

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """The module's load_state_dict (torch's IncompatibleKeys); the next call uses the tensors."""
        return self._module.load_state_dict(state_dict, strict, assign)

    def stats(self):
        return self._forward.stats()

    def clear_cache(self):
        self._forward.clear_cache()

    def set_fail_on_recompile(self, on):
        self._forward.set_fail_on_recompile(on)

    def __getattr__(self, name):
        module = self.__dict__.get("_module")
        if module is None or name.startswith("__"):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        value = getattr(module, name)
        if not (inspect.ismethod(value) and value.__self__ is module):
            return value

        @functools.wraps(value)
        def returning_the_wrapper(*args, **kwargs):
            result = value(*args, **kwargs)
            return self if result is module else result

        return returning_the_wrapper

    def __setattr__(self, name, value):
        setattr(self._module, name, value)

    def __delattr__(self, name):
        delattr(self._module, name)

    def __repr__(self):
        return "CompiledModule(" + repr(self._module).replace("\n", "\n  ") + ")"


def compile(module_or_fn=None, *, dynamic=None, recompile_limit=8, capacity=32, fail_on_recompile=False, name="",
            weights=None, session=None, custom_extensions=(), allow_subgraphs=True):
    """lucid's compile: kiln.compile(module), kiln.compile(fn), @kiln.compile, @kiln.compile(dynamic=True).

    dynamic: None (automatic: sizes that change become symbolic at the second trace), True (dim 0
    of every tensor symbolic from the first trace) or False (one entry per shape). The other
    keywords are JitFunction's; a module gets its own session unless one is given."""
    from .nn import Module

    options = dict(dynamic=dynamic, recompile_limit=recompile_limit, capacity=capacity,
                   fail_on_recompile=fail_on_recompile, name=name, weights=weights, session=session,
                   custom_extensions=custom_extensions, allow_subgraphs=allow_subgraphs)

    def wrap(target):
        if isinstance(target, Module):
            return CompiledModule(target, **options)
        return JitFunction(target, **options)

    return wrap if module_or_fn is None else wrap(module_or_fn)
