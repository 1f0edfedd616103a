"""What the kernel tests (tests/test_kernels_*.py) share: the array modules each test runs over, host copies,
central-difference gradients.

A test takes the `xp` fixture (import it into the test module) and runs once with numpy and once with CuPy; the CuPy
run is skipped, with its reason, where CuPy or a usable GPU is missing (and under ONEFLOW_COMPAT_DEVICE=cpu, the
suite's default, which never imports CuPy), and runs on the fake device under its plugin (`-p strict_device`).
An op that refuses a bad index raises on the host at once, on a device at the next fetch (`host`).
"""
import numpy as np
import pytest


def _usable_cupy():
    from oneflow_compat.backend import devices

    if not devices.cuda_usable():  # not installed, no driver, no device; never probed under ONEFLOW_COMPAT_DEVICE=cpu
        return None
    import cupy

    return cupy


CUPY = _usable_cupy()
ARRAY_MODULES = [pytest.param("numpy", id="numpy"), pytest.param("cupy", id="cupy")]


@pytest.fixture(params=ARRAY_MODULES)
def xp(request):
    """numpy, or the device module: CuPy; with the fake device's plugin (`-p strict_device`) the fake module it
    installed (CuPy's host/device rules on numpy), so that a run without a GPU exercises the device path too. There
    device -> host synchronisations are allowed (recorded), as CuPy makes them: a kernel test checks values and
    errors (tests/test_device_syncs.py and tests/test_gpu_step_budget.py count the synchronisations)."""
    if request.param == "numpy":
        return np
    if request.config.pluginmanager.has_plugin("strict_device"):
        import strict_device
        from oneflow_compat.backend import devices

        request.getfixturevalue("monkeypatch").setattr(strict_device.Syncs, "allowed", True)
        return devices.array_module("gpu")
    if CUPY is None:
        pytest.skip("CuPy with a usable GPU is not available")
    return CUPY


def host(a):
    """A numpy copy of a numpy or device array (tuples and lists element by element), fetched as the runtime fetches
    (`devices.to_host`): a device kernel's failed checks (an index out of range) raise here, at the fetch, as they
    do on the GPU, where the kernel itself reads nothing back (kernels/checks.py)."""
    from oneflow_compat.backend import devices

    if isinstance(a, (tuple, list)):
        return type(a)(host(x) for x in a)
    return devices.to_host(a) if devices.is_device_array(a) else np.asarray(a)


def rng(seed=0):
    return np.random.default_rng(seed)


def numeric_grad(fn, x, eps=1e-6):
    """Central differences of the scalar fn() w.r.t. every element of the float64 numpy array x (changed in place
    and restored)."""
    grad = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        saved = x[index]
        x[index] = saved + eps
        up = fn()
        x[index] = saved - eps
        down = fn()
        x[index] = saved
        grad[index] = (up - down) / (2 * eps)
    return grad
