"""kiln.debug from Python: the stepper stops where a NaN starts, at the Python line that made it;
compare_tiers and summary."""
import re

import numpy as np
import pytest

import kiln
from kiln import compilation, functional as F


def make_nan(x):
    h = x * 2.0
    y = F.log(h - 3.0)
    return y + 1.0


def test_watch_nan_stops_at_the_python_line_that_made_it():
    run = compilation.compile(make_nan)(kiln.TensorLayout(kiln.DType.float32, [4]))
    stepper = kiln.debug.Stepper(run, [np.array([1, 2, 3, 4], np.float32)])
    stepper.watch_nan()
    assert stepper.continue_()
    line = make_nan.__code__.co_firstlineno + 2
    # A watchpoint stops after the op that tripped it, and names it.
    reason = stepper.stop_reason
    assert reason.startswith("watch nan: %4 = kiln.log at test_debug.py:" + str(line) + ":")
    assert "produced 1 NaN of 4 values; its input %3 has min -1, max 5" in reason
    summary = kiln.debug.summary(stepper.value("%4"))
    assert summary.nan == 1 and summary.finite == 3
    out = np.asarray(stepper.finish()[0])
    np.testing.assert_allclose(out[1:], np.log(np.array([1.0, 3.0, 5.0])) + 1.0, rtol=1e-6)


def test_step_walks_every_op_in_order():
    run = compilation.compile(make_nan)(kiln.TensorLayout(kiln.DType.float32, [4]))
    stepper = kiln.debug.Stepper(run, [np.ones(4, np.float32)])
    ops = []
    while stepper.step():
        if not stepper.current.done:
            ops.append(stepper.current.op)
    assert "kiln.log" in ops and ops.index("kiln.log") > ops.index("kiln.mul")


@pytest.mark.skipif(not kiln.has_jit, reason="the JIT tier is not built")
def test_compare_tiers_agrees_on_a_smooth_graph_and_names_sin_past_2_24():
    spec = kiln.TensorLayout(kiln.DType.float32, [8])
    smooth = compilation.compile(lambda x: F.tanh(x) * 3.0 + 1.0)(spec)
    assert kiln.debug.compare_tiers(smooth, [np.linspace(-3, 3, 8, dtype=np.float32)]) is None
    huge = compilation.compile(lambda x: F.sin(x) + 1.0)(spec)
    difference = kiln.debug.compare_tiers(huge, [np.full(8, 3e7, np.float32)])
    assert difference is not None and difference.op.startswith("kiln.sin at test_debug.py:")


def blocky(x):
    """exp, then sqrt(h - 2) * 3 in a subgraph @block (NaN where exp(x) < 2), then log(. + 1)."""
    body = F.as_subgraph("block", lambda h: F.sqrt(h - 2.0) * 3.0)
    return F.log(body(F.exp(x)) + 1.0)


def printed_functions(text):
    """kiln print's text, per function name: {label: op kind} ("%2": "kiln.sqrt")."""
    functions, current = {}, None
    for line in text.splitlines():
        match = re.match(r"  func\.func (?:private )?@(\w+)\(", line)
        if match:
            current = functions.setdefault(match.group(1), {})
        match = re.match(r'    (%\d+) = "(kiln\.\w+)"', line)
        if match:
            current[match.group(1)] = match.group(2)
    return functions


BLOCKY_X = np.array([-1, 0, 1, 2], np.float32)


def test_stepper_takes_a_kiln_compile_callable_and_names_values_as_kiln_print_does():
    printed = printed_functions(compilation.stage(blocky)(kiln.TensorLayout(kiln.DType.float32, [4])).to_mlir())
    assert printed["block"]["%2"] == "kiln.sqrt" and printed["block"]["%1"] == "kiln.sub"
    for callable_ in (kiln.compile(blocky), compilation.compile(blocky)(kiln.TensorLayout(kiln.DType.float32, [4]))):
        stepper = kiln.debug.Stepper(callable_, [BLOCKY_X])
        stepper.watch_nan()
        assert stepper.continue_()
        assert stepper.stop_reason.startswith("watch nan: @block %2 = kiln.sqrt at test_debug.py:")
        assert stepper.current.function == "@block"
        with pytest.raises(kiln.Error, match="freed after its last reader"):
            stepper.value("@block %1")
        # restart: back to the first op, the watchpoint and a new keep in force.
        stepper.keep("@block %1")
        stepper.restart()
        assert stepper.current.index == 0 and stepper.stop_reason == ""
        assert stepper.continue_()
        assert stepper.stop_reason.startswith("watch nan: @block %2 = kiln.sqrt")
        np.testing.assert_allclose(np.asarray(stepper.value("@block %1")), np.exp(BLOCKY_X) - 2.0, rtol=1e-6)
        stepper.break_on_value("@block %2")
        stepper.restart()
        assert stepper.continue_()
        assert stepper.stop_reason.startswith("break @block %2: kiln.sqrt at ")


def test_stepper_refuses_what_is_not_a_compiled_callable():
    with pytest.raises(TypeError, match="expected a compiled callable"):
        kiln.debug.Stepper(blocky, [BLOCKY_X])


def test_kiln_debug_nans_names_log_x_as_kiln_print_does(monkeypatch):
    monkeypatch.setenv("KILN_DEBUG_NANS", "1")
    spec = kiln.TensorLayout(kiln.DType.float32, [4])
    assert '%0 = "kiln.log"(%arg0)' in compilation.stage(lambda x: F.log(x))(spec).to_mlir()
    run = kiln.compile(lambda x: F.log(x), session=kiln.Session(mode="off", async_compile=False))
    with pytest.raises(kiln.Error, match=r"KILN_DEBUG_NANS: %0 = kiln\.log at "):
        run(BLOCKY_X)
    blocked = kiln.compile(blocky, session=kiln.Session(mode="off", async_compile=False))
    with pytest.raises(kiln.Error, match=r"KILN_DEBUG_NANS: @block %2 = kiln\.sqrt at "):
        blocked(BLOCKY_X)
