import os

import pytest

# The benchmark workloads' reference data is not part of the repository: KILN_TEST_BENCH_DATA names its
# folder (CI sets it), and without it the workload tests are skipped, saying so.
BENCH_DATA = os.environ.get("KILN_TEST_BENCH_DATA") or None


@pytest.fixture(params=["off", "always"])
def session(request):
    """A session on the interpreter ("off") or the JIT tier ("always")."""
    import kiln
    return kiln.Session(mode=request.param, async_compile=False)
