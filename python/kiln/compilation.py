"""Modular MAX's compilation API: stage(fn)(specs) gives MLIR text, compile(fn, weights=...)(specs)
a compiled callable. Tracing, caching and the tiers are kiln's C++ ones."""

from . import _kiln
from . import _tree

__all__ = ["stage", "compile", "CompiledCallable", "StagedGraph", "load_staged", "parse_staged"]

StagedGraph = _kiln.StagedGraph
load_staged = _kiln.load_staged
parse_staged = _kiln.parse_staged


class CompiledCallable:
    """A traced, weight-bound graph. Thread-safe: calls release the GIL while the graph runs."""

    def __init__(self, core, template):
        self._core = core
        self._template = template

    def __call__(self, *args):
        leaves, tensors = _tree.flatten_args(args)
        try:
            outputs = self._core.call(leaves, tensors)
        except _kiln.Error:
            in_words = _tree.python_value_for_tensor(self._core._leaves, args)
            if in_words is None:
                raise
            raise in_words from None
        return _tree.rebuild(self._template, outputs)

    def staged(self):
        return StagedGraph(self._core._module, self._core._leaves)

    @property
    def last_tier(self):
        """The tier the most recent call ran on: "interp" or "jit"."""
        return self._core.last_tier()


def _session(session):
    return session if session is not None else _kiln.Session.default()


def stage(fn, *, name="", custom_extensions=(), allow_subgraphs=True):
    """MAX's stage(fn): returns a function of the specs giving the StagedGraph.

    name: the graph's name; by default fn's (a module's class name; "main" for a lambda)."""
    name = _tree.graph_name(fn, name)

    def stager(*specs):
        module, leaves, _ = _tree.trace(fn, specs, name, allow_subgraphs, custom_extensions)
        return StagedGraph(module, leaves)

    return stager


def compile(fn, *, weights=None, name="", custom_extensions=(), allow_subgraphs=True, session=None):
    """MAX's compile(fn, weights=...): returns a function of the specs giving a CompiledCallable.

    weights maps names to anything with __dlpack__ (numpy arrays, torch tensors, kiln Tensors),
    used without a copy; names not in it are looked up in the session's registry. name: the
    graph's name; by default fn's (a module's class name; "main" for a lambda)."""
    name = _tree.graph_name(fn, name)
    weights = dict(weights or {})

    def compiler(*specs):
        module, leaves, template = _tree.trace(fn, specs, name, allow_subgraphs, custom_extensions)
        core = _kiln._CallableCore(module, leaves, weights, name, list(custom_extensions),
                                   allow_subgraphs, _session(session))
        return CompiledCallable(core, template)

    return compiler
