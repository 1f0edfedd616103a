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
