"""`flow.utils.tensor.from_torch` / `to_torch`, `flow.from_dlpack` / `flow.to_dlpack` (OneFlow 0.9): tensors sharing
one memory with torch and numpy, each side seeing the other's writes; the errors for global tensors and bare
capsules. The DLPack round trip through numpy needs no torch."""
import numpy as np
import pytest

import oneflow_compat as flow


def test_dlpack_with_numpy_shares_memory():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = flow.from_dlpack(a)
    assert t.dtype == flow.float64 and tuple(t.shape) == (2, 3) and not t.is_global
    a[0, 0] = -1
    assert t.numpy()[0, 0] == -1
    back = np.from_dlpack(_Exporter(flow.to_dlpack(t)))  # (read-only: a bare capsule, as numpy reads it)
    t.numpy()[1, 2] = 42
    assert back[1, 2] == 42
    with pytest.raises(TypeError, match="a bare DLPack capsule does not say its device"):
        flow.from_dlpack(flow.to_dlpack(t))
    with pytest.raises(RuntimeError, match="only local tensors can be exported"):
        flow.to_dlpack(flow.ones(2, placement=flow.placement("cpu", [0]), sbp=flow.sbp.broadcast))


class _Exporter:
    """A capsule dressed as a CPU array of the DLPack protocol (what numpy's from_dlpack reads)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **_):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_from_torch_and_to_torch_share_memory():
    torch = pytest.importorskip("torch")
    src = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    t = flow.utils.tensor.from_torch(src)
    assert t.dtype == flow.float32 and tuple(t.shape) == (2, 3)
    src[0, 0] = 9
    np.testing.assert_array_equal(t.numpy(), [[9, 1, 2], [3, 4, 5]])
    f = flow.tensor(np.array([[1, 2], [3, 4]], np.int64))
    out = flow.utils.tensor.to_torch(f)
    assert out.dtype == torch.int64
    out[1, 1] = -5
    assert f.numpy()[1, 1] == -5
    shared = torch.from_dlpack(flow.to_dlpack(f))  # a capsule, as torch takes it
    shared[0, 0] = 11
    assert f.numpy()[0, 0] == 11
    # a global tensor: a CPU copy of its value (OneFlow 0.9, utils/tensor/from_or_to_torch_tensor.py)
    g = flow.ones(2, placement=flow.placement("cpu", [0]), sbp=flow.sbp.broadcast)
    copy = flow.utils.tensor.to_torch(g)
    assert copy.dtype == torch.float32 and copy.tolist() == [1.0, 1.0]
    copy[0] = 7.0
    assert g.numpy().tolist() == [1.0, 1.0]
