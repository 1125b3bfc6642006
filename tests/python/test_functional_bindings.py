"""kiln.functional against the op table and its stubs: every op of src/ir/op_table.def has its F.
function, bound and stubbed, and each binding takes the parameters its stub declares, so neither can
be forgotten or drift silently (docs/adding-an-op.md)."""

import ast
import pathlib
import re

import pytest

import kiln._kiln as _kiln
import kiln.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[2]
OP_TABLE = ROOT / "src" / "ir" / "op_table.def"
STUBS = ROOT / "python" / "kiln" / "functional.pyi"

# An op's F. function has the op's name, except these, whose functions are named as torch names
# them (or which several functions stage).
FUNCTIONS_OF_OP = {
    "reduce_sum": ["sum"],
    "reduce_mean": ["mean"],
    "reduce_max": ["max"],
    "reduce_min": ["min"],
    "reduce_prod": ["prod"],
    "reduce_var": ["var"],
    "reduce_std": ["std"],
    "compare": ["eq", "ne", "lt", "le", "gt", "ge"],
    "call": ["as_subgraph"],
}

# Functions defined in Python (kiln/functional.py), not bound from C++.
PYTHON_FUNCTIONS = {"as_subgraph"}


def op_names():
    rows = re.findall(r"^KILN_OP\((\w+),", OP_TABLE.read_text(), re.MULTILINE)
    assert len(rows) > 80, "op_table.def rows not found"
    return rows


def stubs():
    tree = ast.parse(STUBS.read_text())
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def split_top_level(text):
    """Splits a signature's parameter list at the commas outside brackets."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def bound_parameters(name):
    """(name, has a default) per parameter of the binding's first signature; *args as '*'."""
    doc = getattr(_kiln.functional, name).__doc__
    first = next(line for line in doc.splitlines() if re.match(rf"(\d+\. )?{name}\(", line))
    inner = first[first.index("(") + 1 : first.rindex(") ->")]
    params = []
    for part in split_top_level(inner):
        if part.startswith("*"):
            params.append(("*", False))
            continue
        params.append((part.split(":")[0].strip(), "=" in part))
    return params


def stub_parameters(node):
    args = node.args
    positional = args.posonlyargs + args.args
    first_default = len(positional) - len(args.defaults)
    params = [(a.arg, i >= first_default) for i, a in enumerate(positional)]
    if args.vararg:
        params.append(("*", False))
    return params


@pytest.mark.parametrize("op", op_names())
def test_every_op_of_the_table_has_its_functional_form_bound_and_stubbed(op):
    stubbed = stubs()
    for function in FUNCTIONS_OF_OP.get(op, [op]):
        assert hasattr(F, function), f"kiln.{op} has no kiln.functional.{function} (python/src/functional.cpp)"
        assert function in stubbed, f"kiln.functional.{function} has no stub in python/kiln/functional.pyi"


def test_the_renamed_ops_are_still_in_the_table():
    ops = set(op_names())
    assert set(FUNCTIONS_OF_OP) <= ops


def test_every_binding_has_a_stub_and_every_stub_a_function():
    bound = {name for name in dir(_kiln.functional) if not name.startswith("_")}
    stubbed = set(stubs())
    assert bound - stubbed == set(), "bound without a stub in functional.pyi"
    assert stubbed - bound - PYTHON_FUNCTIONS == set(), "stubbed without a binding"
    assert set(F.__all__) == bound | PYTHON_FUNCTIONS


@pytest.mark.parametrize("name", sorted(n for n in dir(_kiln.functional) if not n.startswith("_")))
def test_each_binding_takes_the_parameters_its_stub_declares(name):
    # Names and which have defaults: a keyword the stub promises must work, and an argument the stub
    # makes optional must be optional.
    assert bound_parameters(name) == stub_parameters(stubs()[name])

