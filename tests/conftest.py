import os
import sys

import pytest

os.environ.setdefault("ONEFLOW_COMPAT_SEED", "1234")
# the suite runs on CPU devices and never touches CUDA, unless a GPU run asks for ONEFLOW_COMPAT_DEVICE=gpu
os.environ.setdefault("ONEFLOW_COMPAT_DEVICE", "cpu")

HERE = os.path.dirname(os.path.abspath(__file__))
MNIST = os.path.join(HERE, "..", "..", "shared", "data", "mnist.npz")


@pytest.fixture(autouse=True)
def fresh_session():
    """Every test starts from a fresh process context (runtime/context.py): a new default session in lazy mode, a
    fresh flow.env, neither of OneFlow's two APIs chosen (one process runs either legacy job functions or global
    tensors, and this suite runs tests of both in one process), no eager plans, boxing log or graph reports."""
    import oneflow_compat  # noqa: F401 - the package registers its ops on import
    from oneflow_compat.runtime import context

    context.reset()
    yield
    context.reset()


@pytest.fixture
def mnist_path():
    if not os.path.exists(MNIST):
        pytest.skip("../shared/data/mnist.npz is not present")
    return os.path.abspath(MNIST)


# --- gpu (issue 22): tests of CPU-only behaviour, skipped when the suite runs on a GPU ----------------------------
CPU_ONLY = ("cpu_only(reason): the test asserts behaviour only CPU devices have (CPU devices of one process sharing "
            "one array per variable, batching row pieces, the text of CPU placements); under "
            "ONEFLOW_COMPAT_DEVICE=gpu (and the fake device's plugin, tests/strict_device.py) it is skipped with its "
            "reason")


def pytest_configure(config):
    config.addinivalue_line("markers", CPU_ONLY)


def suite_on_gpu(config):
    """Whether this run puts every placement on a GPU: ONEFLOW_COMPAT_DEVICE=gpu, or the fake device's plugin."""
    return os.environ.get("ONEFLOW_COMPAT_DEVICE", "").strip().lower() == "gpu" or \
        config.pluginmanager.has_plugin("strict_device")


def pytest_collection_modifyitems(config, items):
    if not suite_on_gpu(config):
        return
    for item in items:
        marker = item.get_closest_marker("cpu_only")
        if marker is not None:
            reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
            item.add_marker(pytest.mark.skip(reason="CPU devices only: %s" % reason))
