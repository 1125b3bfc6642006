import os

import pytest

# The reference workloads live beside the repository (../shared/bench/data); KILN_BENCH_DATA moves them.
BENCH_DATA = os.environ.get("KILN_BENCH_DATA",
                            os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "bench", "data"))


@pytest.fixture(params=["off", "always"])
def session(request):
    """A session on the interpreter ("off") or the JIT tier ("always")."""
    import kiln
    return kiln.Session(mode=request.param, async_compile=False)
