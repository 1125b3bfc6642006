"""Graph-building functions (kiln's F::): eager on concrete tensors, staged while tracing, each op
recording the Python line that called it."""

from . import _kiln
from . import _tree

__all__ = [name for name in dir(_kiln.functional) if not name.startswith("_")] + ["as_subgraph"]
globals().update({name: getattr(_kiln.functional, name) for name in __all__ if name != "as_subgraph"})


def as_subgraph(name, fn):
    """Traces fn once per distinct boundary signature into a private function and calls it
    (func.call); inlined outside a trace or with allow_subgraphs=False, as F::as_subgraph."""

    def call(*args):
        if not _kiln._subgraphs_enabled():
            return fn(*args)
        leaves, tensors = _tree.flatten_args(args)
        key = _kiln._subgraph_key(name, f"python:{id(fn)}", leaves)
        body = _kiln._find_subgraph(key)
        if body is None:
            params = _kiln._begin_subgraph(name, leaves)
            try:
                outputs, template = _tree.flatten_result(fn(*_tree.replace_tensors(args, params)))
                body = _kiln._end_subgraph(key, outputs, template)
            except BaseException:
                _kiln._abandon_subgraph()
                raise
        return _tree.rebuild(body.result_template, _kiln._emit_call(body.function, tensors))

    return call
