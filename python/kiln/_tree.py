"""Spec, argument and result trees, flattened the way the C++ front end flattens them.

Leaves are named by argument position, then list index or dict key ("0", "1.lo"); dict keys are
visited in sorted order, as std::map visits them. Scalars and strings are baked into the graph and
checked again at each call.
"""

import re

from . import _kiln

_GRAPH_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def error(kind, message):
    """A kiln.Error of `kind` ("spec", "shape", ...), worded as the C++ errors are."""
    e = _kiln.Error(f"{kind} error: {message}")
    e.kind = kind
    return e


def graph_name(fn, name="", default=""):
    """MAX's rule: the graph (module and entry function) is named `name`, else after fn: its
    __name__, a module or its bound forward after the module's class; a lambda, or anything without
    such a name, gets `default` ("" leaves the C++ API's own default)."""
    if name:
        if not _GRAPH_NAME.fullmatch(name):
            raise error("spec", f"graph name '{name}' must match [A-Za-z_][A-Za-z0-9_]*")
        return name
    from .nn import Module
    owner = getattr(fn, "__self__", None)
    if isinstance(fn, Module):
        derived = type(fn).__name__
    elif isinstance(owner, Module) and getattr(fn, "__name__", "") == "forward":
        derived = type(owner).__name__
    else:
        derived = getattr(fn, "__name__", "")
    return derived if isinstance(derived, str) and _GRAPH_NAME.fullmatch(derived) else default


class Slot:
    """Where output number `index` goes in a result template."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


def _is_tensor_like(value):
    return isinstance(value, _kiln.Tensor) or hasattr(value, "__dlpack__")


def _baked(value):
    return f"{type(value).__name__}:{value!r}"


def _children(value, path):
    if isinstance(value, (list, tuple)):
        return [(f"{path}.{i}", v) for i, v in enumerate(value)]
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise error("spec", f"argument {path}: dict keys must be strings, got {type(key).__name__}")
        return [(f"{path}.{key}", value[key]) for key in sorted(value)]
    return None


def _same_container(container, items):
    if isinstance(container, dict):
        return dict(zip(sorted(container), items))
    if isinstance(container, tuple) and hasattr(container, "_fields"):  # a namedtuple
        return type(container)(*items)
    return type(container)(items)


def flatten_specs(specs):
    leaves = []

    def visit(spec, path):
        if isinstance(spec, _kiln.BufferLayout):
            leaves.append(_kiln.TreeLeaf(path, "buffer", spec))
        elif isinstance(spec, _kiln.TensorLayout):
            leaves.append(_kiln.TreeLeaf(path, "tensor", spec))
        elif _is_tensor_like(spec):
            raise error("spec", f"argument {path}: a live Tensor cannot be a spec: pass tensor.layout "
                                "(a TensorLayout) instead")
        elif isinstance(spec, (bool, int, float, str)):
            leaves.append(_kiln.TreeLeaf(path, "baked", None, _baked(spec)))
        else:
            children = _children(spec, path)
            if children is None:
                raise error("spec", f"argument {path}: specs are TensorLayout, BufferLayout, numbers, strings "
                                    f"or lists, tuples and dicts of them, got {type(spec).__name__}")
            for child_path, child in children:
                visit(child, child_path)

    for position, spec in enumerate(specs):
        visit(spec, str(position))
    return leaves


def _replace_leaves(values, replacements, is_leaf):
    """values with each leaf (is_leaf) replaced by the next of replacements, in flatten order;
    numbers and strings stay, containers are rebuilt."""
    remaining = iter(replacements)

    def build(value, path):
        if is_leaf(value):
            return next(remaining)
        if isinstance(value, (bool, int, float, str)):
            return value
        children = _children(value, path)
        return _same_container(value, [build(child, child_path) for child_path, child in children])

    return [build(value, str(position)) for position, value in enumerate(values)]


def build_traced(specs, tensors):
    """The specs with each layout replaced by its traced tensor, in flatten order."""
    return _replace_leaves(specs, tensors, lambda spec: isinstance(spec, _kiln.TensorLayout))


def flatten_args(args):
    leaves, tensors = [], []

    def visit(arg, path):
        if _is_tensor_like(arg):
            tensor = _kiln.Tensor(arg)
            leaves.append(_kiln.TreeLeaf(path, "tensor", tensor.layout))
            tensors.append(tensor)
        elif isinstance(arg, (bool, int, float, str)):
            leaves.append(_kiln.TreeLeaf(path, "baked", None, _baked(arg)))
        else:
            children = _children(arg, path)
            if children is None:
                raise error("spec", f"argument {path}: expected tensors, numbers, strings or lists, tuples "
                                    f"and dicts of them, got {type(arg).__name__}")
            for child_path, child in children:
                visit(child, child_path)

    for position, arg in enumerate(args):
        visit(arg, str(position))
    return leaves, tensors


def _described(value):
    """A Python value in words, for errors: "a Python list of 3 floats"."""
    if value is None:
        return "None"
    if isinstance(value, (list, tuple)):
        kind = type(value).__name__
        if not value:
            return f"an empty Python {kind}"
        names = {type(v).__name__ for v in value}
        items = f"{names.pop()}{'s' if len(value) != 1 else ''}" if len(names) == 1 else "values of mixed types"
        return f"a Python {kind} of {len(value)} {items}"
    return f"a Python {type(value).__name__}"


def _how_to_pass(value, dtype):
    if not isinstance(value, (list, tuple, bool, int, float)):
        return "pass a kiln.Tensor or an array with __dlpack__"
    if dtype.name == "bfloat16":
        return "pass a bfloat16 array with __dlpack__ (torch.tensor(..., dtype=torch.bfloat16))"
    numpy_name = "bool_" if dtype.name == "bool" else dtype.name
    return f"wrap it in kiln.Tensor(numpy.asarray(..., dtype=numpy.{numpy_name}))"


def _value_at(args, path):
    """The argument at a leaf path ("1.lo"), or None when the call's structure has no such place."""
    position, *rest = path.split(".")
    value = args[int(position)] if int(position) < len(args) else None
    for key in rest:
        if isinstance(value, (list, tuple)) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        else:
            return None
    return value


def python_value_for_tensor(spec_leaves, args):
    """A kiln.Error naming, in words, the first argument that is a Python value (a list, a number)
    where the spec has a tensor; None when there is none."""
    for leaf in spec_leaves:
        if leaf.baked:  # a baked number or string, not a tensor
            continue
        value = _value_at(args, leaf.path)
        if value is None or _is_tensor_like(value):
            continue
        return error("spec", f"argument {leaf.path}: expected a tensor ({leaf.layout}), got {_described(value)}; "
                             f"{_how_to_pass(value, leaf.layout.dtype)}")
    return None


def replace_tensors(args, replacements):
    """The call's arguments with each tensor replaced by the next of `replacements` (the layouts to
    trace it with, or a subgraph body's parameters)."""
    return _replace_leaves(args, replacements, _is_tensor_like)


def flatten_result(result):
    """The result's tensors in order, and a template with a Slot where each one goes."""
    outputs = []

    def visit(value):
        if isinstance(value, _kiln.Tensor):
            outputs.append(value)
            return Slot(len(outputs) - 1)
        if value is None:
            return None
        if isinstance(value, (list, tuple)):
            return _same_container(value, [visit(v) for v in value])
        if isinstance(value, dict):
            return {key: visit(v) for key, v in value.items()}
        raise error("spec", f"a traced function returns tensors or lists, tuples and dicts of them, "
                            f"got {type(value).__name__}")

    return outputs, visit(result)


def rebuild(template, outputs):
    if isinstance(template, Slot):
        return outputs[template.index]
    if template is None:
        return None
    if isinstance(template, (list, tuple)):
        return _same_container(template, [rebuild(t, outputs) for t in template])
    return {key: rebuild(t, outputs) for key, t in template.items()}


def trace(fn, specs, name="", allow_subgraphs=True, custom_extensions=()):
    """Traces fn over the specs: (module, spec leaves, result template)."""
    leaves = flatten_specs(specs)
    session = _kiln._TraceSession(name, allow_subgraphs, list(custom_extensions))
    try:
        args = build_traced(specs, session.add_inputs(leaves))
        outputs, template = flatten_result(fn(*args))
        module = session.finish(outputs)
    except BaseException:
        session.abort()
        raise
    return module, leaves, template
