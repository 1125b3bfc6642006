"""The production API from Python: every keyword of kiln.compile, compilation.stage/compile and
Session takes effect or is refused by name; Session's stats as data; graph names after fn; the
symbolic-dims fallback logged under KILN_LOG=recompiles only."""
import numpy as np
import pytest

import kiln
from kiln import functional as F

W_LAYOUT = kiln.TensorLayout(kiln.DType.float32, [3])


def scaled(x):
    return x * F.constant_external("w", W_LAYOUT)


def test_kiln_compile_binds_its_weights():
    w = np.array([1.0, 2.0, 3.0], np.float32)
    fn = kiln.compile(scaled, weights={"w": w}, session=kiln.Session(mode="off"))
    np.testing.assert_array_equal(np.asarray(fn(np.ones(3, np.float32))), w)


def test_kiln_compile_refuses_unknown_keywords_and_bad_names_by_name():
    with pytest.raises(TypeError, match="dynamc"):
        kiln.compile(scaled, dynamc=True)
    with pytest.raises(kiln.Error, match="graph name 'my graph' must match"):
        kiln.compile(scaled, name="my graph")


def test_allow_subgraphs_reaches_the_trace():
    seen = []

    def block(x):
        return F.relu(x) * 2.0

    def fn(x):
        seen.append(kiln._kiln._subgraphs_enabled())
        return F.as_subgraph("block", block)(F.as_subgraph("block", block)(x))

    for allow in (True, False):
        compiled = kiln.compile(fn, allow_subgraphs=allow, session=kiln.Session(mode="off"))
        np.testing.assert_array_equal(np.asarray(compiled(np.array([-1.0, 1.0, 2.0], np.float32))), [0, 4, 8])
    assert seen == [True, False]
    assert "func.call @block" in kiln.compilation.stage(fn)(W_LAYOUT).to_mlir()
    assert "func.call" not in kiln.compilation.stage(fn, allow_subgraphs=False)(W_LAYOUT).to_mlir()


def test_session_mode_takes_kiln_jits_spellings(monkeypatch):
    monkeypatch.delenv("KILN_JIT", raising=False)
    for spelling, name in [("auto", "auto"), ("automatic", "auto"), ("1", "auto"), ("off", "off"), ("0", "off"),
                           ("ALWAYS", "always")]:
        assert kiln.Session(mode=spelling).mode == name
    with pytest.raises(kiln.Error, match="Session mode='sometimes': expected off, auto, always, automatic, 0 or 1"):
        kiln.Session(mode="sometimes")
    monkeypatch.setenv("KILN_JIT", "off")
    monkeypatch.setenv("KILN_PROMOTE_AFTER", "5")
    session = kiln.Session()  # unset keywords: the environment's settings, as a C++ Session()
    assert session.mode == "off" and session.promote_after == 5
    assert kiln.Session(mode="always", promote_after=0).promote_after == 0


def test_session_stats_and_totals_are_plain_data():
    session = kiln.Session(mode="off")
    fn = kiln.compilation.compile(lambda x: x + 1.0, session=session)(W_LAYOUT)
    for _ in range(3):
        fn(np.zeros(3, np.float32))
    stats = session.stats()
    assert isinstance(stats, list) and len(stats) == 1
    entry = stats[0]
    assert entry["callable"] == "main" and entry["signature"] == "f32[3]" and entry["tier"] == "interp"
    assert entry["calls"] == 3 and entry["calls_per_tier"] == {"interp": 3}
    assert isinstance(entry["total_ms"], float) and isinstance(entry["arena_bytes"], int)
    assert isinstance(entry["ops_per_lowering"], dict) and entry["jit_error"] == ""
    assert session.totals() == {"signatures_compiled": 1, "evictions": 0, "promotions": 0, "failed_promotions": 0}


class Doubler(kiln.nn.Module):
    def forward(self, x):
        return x * 2.0


def test_compiled_module_exposes_its_session_and_fail_on_recompile():
    model = kiln.nn.Linear(3, 2, seed=1)
    compiled = kiln.compile(model, dynamic=False)
    assert isinstance(compiled.session, kiln.Session)
    x = np.ones((1, 3), np.float32)
    compiled(x)
    assert compiled.session.stats()[0]["callable"] == "Linear"
    compiled.set_fail_on_recompile(True)
    with pytest.raises(kiln.Error, match="would recompile, and fail_on_recompile is set"):
        compiled(np.ones((2, 3), np.float32))
    compiled.set_fail_on_recompile(False)
    assert compiled(np.ones((2, 3), np.float32)).shape == [2, 2]


def my_layer(x):
    return x + 1.0


@pytest.mark.parametrize("fn, name", [
    (my_layer, "my_layer"),
    (lambda x: x + 1.0, "main"),
    (Doubler(), "Doubler"),
    (Doubler().forward, "Doubler"),
])
def test_graphs_are_named_after_fn(fn, name):
    text = kiln.compilation.stage(fn)(W_LAYOUT).to_mlir()
    assert f"module @{name} {{" in text and f"func.func @{name}(" in text
    renamed = kiln.compilation.stage(fn, name="chosen")(W_LAYOUT).to_mlir()
    assert "module @chosen {" in renamed


def test_jit_graphs_are_named_after_fn():
    session = kiln.Session(mode="off")
    kiln.compile(my_layer, session=session)(np.zeros(3, np.float32))
    kiln.compile(lambda x: x * 3.0, session=session)(np.zeros(3, np.float32))
    assert sorted(entry["callable"] for entry in session.stats()) == ["fn", "my_layer"]


def test_a_plain_callables_wrapper_has_no_parameters():
    fn = kiln.compile(my_layer)
    assert list(fn.parameters()) == [] and list(fn.named_parameters()) == [] and fn.state_dict() == {}


def split_last(x):
    return F.split(x, [1, 1], 0)[1] * 2.0  # sizes that must add up to dim 0: cannot stay symbolic


def test_symbolic_fallback_is_silent_without_kiln_log(monkeypatch, capfd):
    monkeypatch.delenv("KILN_LOG", raising=False)
    fn = kiln.compile(split_last, dynamic=True, session=kiln.Session(mode="off"))
    assert fn(np.ones((2, 3), np.float32)).shape == [1, 3]
    assert capfd.readouterr().err == ""


def test_symbolic_fallback_is_logged_once_under_kiln_log_recompiles(monkeypatch, capfd):
    monkeypatch.setenv("KILN_LOG", "recompiles")
    fn = kiln.compile(split_last, dynamic=True, session=kiln.Session(mode="off"))
    fn(np.ones((2, 3), np.float32))
    err = capfd.readouterr().err
    assert "split_last cannot be traced with symbolic dims, so it gets one entry per shape: shape error: " in err
    assert "shape error: shape error:" not in err
