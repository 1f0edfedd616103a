"""References computed on CPU devices whatever ONEFLOW_COMPAT_DEVICE says.

The suite also runs on a GPU (`ONEFLOW_COMPAT_DEVICE=gpu`: every placement on CuPy). A test whose reference comes
from the framework itself (a numeric gradient through a predict job, the "want" run of a device test) must then
compute that reference on CPU devices, so that the GPU run is compared with numpy, not with another GPU run:
`with on_cpu(): want = run()`. `device_under_test()` says what the test's own run uses.
"""
import contextlib
import os

import oneflow_compat as flow
from oneflow_compat.backend import devices

_VARIABLE = devices.MODE_ENV


@contextlib.contextmanager
def on_cpu():
    """The block runs on CPU devices (ONEFLOW_COMPAT_DEVICE=cpu), in a fresh default session; the variable and a
    fresh session are back after it."""
    old = os.environ.get(_VARIABLE)
    os.environ[_VARIABLE] = "cpu"
    flow.clear_default_session()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(_VARIABLE, None)
        else:
            os.environ[_VARIABLE] = old
        flow.clear_default_session()


def device_under_test():
    """'gpu' when the suite runs every placement on the GPU, else 'cpu'."""
    return "gpu" if devices.mode() == "gpu" else "cpu"


def child_device():
    """What the "cpu" placements of a child process started with this environment run on: 'gpu' where
    ONEFLOW_COMPAT_DEVICE=gpu is set (the GPU run's suite), else 'cpu' (the fake device's plugin fakes this process
    only: its children run on CPU devices). Reports and messages name the device a placement runs on."""
    return "gpu" if os.environ.get(_VARIABLE, "").strip().lower() == "gpu" else "cpu"
