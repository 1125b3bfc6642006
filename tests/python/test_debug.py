"""kiln.debug from Python: the stepper stops where a NaN starts, at the Python line that made it;
compare_tiers and summary."""
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
