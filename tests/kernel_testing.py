"""What the kernel tests (tests/test_kernels_*.py) share: the array modules each test runs over, host copies,
central-difference gradients.

A test takes the `xp` fixture (import it into the test module) and runs once with numpy and once with CuPy; the CuPy
run is skipped, with its reason, where CuPy or a usable GPU is missing (and under ONEFLOW_COMPAT_DEVICE=cpu, the
suite's default, which never imports CuPy).
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
ARRAY_MODULES = [pytest.param(np, id="numpy"),
                 pytest.param(CUPY, id="cupy",
                              marks=pytest.mark.skipif(CUPY is None, reason="CuPy with a usable GPU is not available"))]


@pytest.fixture(params=ARRAY_MODULES)
def xp(request):
    return request.param


def host(a):
    """A numpy copy of a numpy or CuPy array (tuples and lists element by element)."""
    if isinstance(a, (tuple, list)):
        return type(a)(host(x) for x in a)
    return a.get() if hasattr(a, "get") else np.asarray(a)


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
