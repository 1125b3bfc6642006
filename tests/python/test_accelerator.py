"""The accelerator tier from Python: the devices, a session promoting to it, compare_tiers."""
import os

import numpy as np
import pytest

import kiln
from kiln import functional as F


def test_devices_say_what_there_is_or_why_not():
    devices = kiln.devices()
    assert kiln.accelerator_count() == len(devices)
    if not kiln.has_accelerator_tier:
        assert devices == []
        assert "no accelerator tier" in kiln.accelerator_unavailable_reason()
        return
    if not devices:
        assert kiln.accelerator_unavailable_reason() != ""
        if os.environ.get("KILN_TEST_REQUIRE_VULKAN") == "1":
            pytest.fail("no Vulkan device: " + kiln.accelerator_unavailable_reason())
        pytest.skip("no Vulkan device: " + kiln.accelerator_unavailable_reason())
    assert kiln.accelerator_unavailable_reason() == ""
    for i, device in enumerate(devices):
        assert device["index"] == i
        assert device["name"]
        assert device["type"] in ("cpu", "discrete-gpu", "integrated-gpu", "virtual-gpu", "other")
        assert device["max_workgroup_invocations"] > 0


def test_a_session_promoting_to_the_accelerator_agrees_with_the_interpreter():
    if kiln.accelerator_count() == 0:
        pytest.skip("no accelerator: " + kiln.accelerator_unavailable_reason())

    def model(x):
        return F.softmax(F.gelu(x * 2.0 + 1.0), -1)

    x = np.random.default_rng(3).standard_normal((7, 17)).astype(np.float32)
    session = kiln.Session(mode="always", promote_to="accelerator", async_compile=False)
    assert session.promote_to == "accelerator"
    f = kiln.compile(model, session=session)
    want = kiln.compile(model, session=kiln.Session(mode="off"))(x)
    np.testing.assert_allclose(np.asarray(f(x)), np.asarray(want), rtol=1e-5, atol=1e-6)
    assert session.stats()[0]["tier"] == "accelerator"
    # The device arena: the fused kernel reads x while it writes its result, and the softmax's
    # result takes x's place, so two [7, 17] values at most are live at once.
    value_bytes = 7 * 17 * 4
    assert 2 * value_bytes <= session.stats()[0]["device_bytes"] < 3 * value_bytes
    assert kiln.debug.compare_tiers(f, [x]) is None


def test_promote_to_is_checked():
    with pytest.raises(kiln.Error, match="promote_to='gpu'"):
        kiln.Session(promote_to="gpu")


def test_without_a_driver_the_count_is_0_and_the_reason_says_so():
    if not kiln.has_accelerator_tier:
        pytest.skip("this build has no accelerator tier")
    import subprocess
    import sys
    env = dict(os.environ, VK_ICD_FILENAMES="/nonexistent/icd.json", VK_DRIVER_FILES="/nonexistent/icd.json")
    code = "import kiln; print(kiln.accelerator_count()); print(kiln.accelerator_unavailable_reason())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    count, reason = out.splitlines()[:2]
    assert count == "0"
    assert "driver" in reason or "device" in reason
