"""Settings and messages a new user meets: a misspelled KILN_* variable is named once with the
setting meant, a Python list where a tensor belongs is said in words, and uint8 arithmetic runs."""
import os
import subprocess
import sys

import numpy as np
import pytest

import kiln
from kiln import functional as F

# A fresh interpreter: the warning is printed once per process, at the first setting kiln reads.
_TWO_SESSIONS_AND_CALLS = """
import numpy as np, kiln
from kiln import functional as F
for mode in ("off", "always"):
    session = kiln.Session(mode=mode)
    spec = kiln.TensorLayout(kiln.DType.float32, [3])
    run = kiln.compilation.compile(lambda x: F.relu(x), session=session)(spec)
    for _ in range(3):
        run(np.ones(3, np.float32))
print("ran")
"""


def _run_python(extra_env):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_") or k == "KILN_JIT_ASYNC"}
    env.update(extra_env)
    return subprocess.run([sys.executable, "-c", _TWO_SESSIONS_AND_CALLS], env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_misspelled_setting_is_named_once_with_the_one_meant():
    result = _run_python({"KILN_DEBUG_NAN": "1", "KILN_LOGS": "all", "KILN_JIT": "auto", "KILN_TEST_ANY": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ran\n"
    assert sorted(result.stderr.splitlines()) == [
        "kiln: KILN_DEBUG_NAN is not a kiln setting; did you mean KILN_DEBUG_NANS?",
        "kiln: KILN_LOGS is not a kiln setting; did you mean KILN_LOG?",
    ]


def test_known_settings_draw_no_warning():
    result = _run_python({"KILN_JIT": "off", "KILN_NUM_THREADS": "2", "KILN_BUILD_DIR": "build"})
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


SPEC = kiln.TensorLayout(kiln.DType.float32, [3])


@pytest.mark.parametrize("value, words", [
    ([0.0, 0.0, 0.0], "a Python list of 3 floats"),
    ([[1.0, 2.0, 3.0]], "a Python list of 1 list"),
    ((1, 2, 3), "a Python tuple of 3 ints"),
    (2.5, "a Python float"),
])
def test_a_python_value_where_a_tensor_belongs_is_said_in_words(value, words):
    run = kiln.compilation.compile(lambda x: x * 2)(SPEC)
    with pytest.raises(kiln.Error) as info:
        run(value)
    assert info.value.kind == "spec"
    assert str(info.value) == (f"spec error: argument 0: expected a tensor (f32 [3] on cpu:0), got {words}; "
                               "wrap it in kiln.Tensor(numpy.asarray(..., dtype=numpy.float32))")
    wrapped = kiln.Tensor(np.broadcast_to(np.asarray(value, dtype=np.float32), (1, 3)).reshape(3).copy())
    assert np.array_equal(np.asarray(run(wrapped)), np.asarray(wrapped) * 2)  # the advice works


def test_a_nested_python_list_is_named_by_its_leaf():
    pair = kiln.TensorLayout(kiln.DType.int32, [2])
    run = kiln.compilation.compile(lambda p: p[0] + p[1])((pair, pair))
    with pytest.raises(kiln.Error, match=r"argument 0\.1: expected a tensor \(i32 \[2\] on cpu:0\), got a Python "
                                         r"list of 2 ints; wrap it in kiln\.Tensor\(numpy\.asarray\(\.\.\., "
                                         r"dtype=numpy\.int32\)\)"):
        run((np.zeros(2, np.int32), [1, 2]))


def test_uint8_plus_an_int64_scalar_tensor_is_uint8_and_wraps(session):
    pixels = np.array([0, 100, 200, 255], np.uint8)
    offset = kiln.Tensor(np.array(100, np.int64))
    eager = F.add(kiln.Tensor(pixels), offset)
    assert eager.dtype == kiln.DType.uint8
    assert np.array_equal(np.asarray(eager), np.array([100, 200, 44, 99], np.uint8))
    run = kiln.compilation.compile(lambda x, y: F.add(x, y), session=session)(kiln.Tensor(pixels).layout,
                                                                               offset.layout)
    assert np.array_equal(np.asarray(run(pixels, offset)), np.array([100, 200, 44, 99], np.uint8))
