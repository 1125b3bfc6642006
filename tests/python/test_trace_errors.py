"""A trace that fails leaves its compiled function usable: the error is raised again at the next
call with that signature, even while the first error (and its traceback) is kept."""
import os
import subprocess
import sys
import textwrap

import kiln

PROGRAM = textwrap.dedent("""
    import numpy as np, kiln
    from kiln import functional as F

    def bad(x):
        return F.matmul(x, x)  # [2, 3] @ [2, 3]: a shape error at trace time

    fn = kiln.compile(bad)
    kept = []
    for attempt in range(2):
        try:
            fn(np.ones((2, 3), np.float32))
        except kiln.Error as e:
            kept.append(e)  # as pytest.raises, a logger or the REPL's sys.last_traceback keep it
    print(len(kept), "errors")
""")


def test_a_kept_trace_error_does_not_hang_the_next_call():
    # In a child process: before the fix the second call waited forever for the first trace.
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(kiln.__file__)))
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2 errors"
