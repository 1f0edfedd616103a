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
    """Every test starts with a new default session (and lazy mode), and with neither of OneFlow's two APIs chosen:
    one process runs either legacy job functions or global tensors (framework/client_mode.py), and this suite runs
    tests of both in one process."""
    import oneflow_compat as flow
    from oneflow_compat.framework import client_mode
    from oneflow_compat.framework import session as sess

    sess._EAGER_FLAG[0] = False
    flow.clear_default_session()
    client_mode.reset()
    yield
    sess._EAGER_FLAG[0] = False
    flow.clear_default_session()
    client_mode.reset()


@pytest.fixture
def mnist_path():
    if not os.path.exists(MNIST):
        pytest.skip("../shared/data/mnist.npz is not present")
    return os.path.abspath(MNIST)
