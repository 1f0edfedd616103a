"""Indexing and index assignment with tensors, lists and masks (issue 21, part 1), against torch (PyTorch's rules,
which OneFlow 0.9 follows), values and gradients."""
import numpy as np
import pytest

import oneflow_compat as flow

torch = pytest.importorskip("torch")

KEYS = [
    lambda F: (F([1, 0]),),
    lambda F: (slice(None), [0, 2]),
    lambda F: (slice(None), F([0, 2]), F([1, 3])),
    lambda F: (0, slice(None), [3, 1]),
    lambda F: (F([[1], [0]]), slice(1, None), F([2, 3])),
    lambda F: (Ellipsis, F([[0], [1]]), None, F([1, 2])),
    lambda F: (F([-1, 0]),),
]


@pytest.mark.parametrize("k", range(len(KEYS)))
def test_advanced_indexing_matches_torch(k):
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7
    x = flow.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    key = KEYS[k](lambda v: flow.tensor(v))
    tkey = KEYS[k](lambda v: torch.tensor(v))
    out, tout = x[key], tx[tkey]
    assert tuple(out.shape) == tuple(tout.shape)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy())
    w = np.random.RandomState(k).randn(*tout.shape)
    (out * flow.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_boolean_masks_and_errors():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = flow.tensor(a)
    np.testing.assert_array_equal(x[x > 5].numpy(), a[a > 5])
    np.testing.assert_array_equal(x[flow.tensor([True, False, True])].numpy(), a[[True, False, True]])
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[flow.tensor([3])]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, uint8 or bool tensors"):
        x[flow.tensor([0.5])]
    with pytest.raises(IndexError, match="shape mismatch: indexing tensors could not be broadcast together"):
        x[flow.tensor([0, 1]), flow.tensor([0, 1, 2])]


def test_index_assignment():
    t = flow.ones(4, 4)
    t[:, 1] = 0
    t[flow.tensor([0, 3]), 2] = 5
    t[t > 4] = flow.tensor(7.0)
    want = np.ones((4, 4), np.float32)
    want[:, 1] = 0
    want[[0, 3], 2] = 7
    np.testing.assert_array_equal(t.numpy(), want)
    leaf = flow.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Tensor that requires grad is being used in an in-place"):
        leaf[0] = 3.0


def test_global_tensor_index_and_assignment_on_one_rank():
    p = flow.placement("cpu", ranks=[0])
    g = flow.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), placement=p, sbp=flow.sbp.split(0))
    np.testing.assert_array_equal(g[flow.tensor([2, 0])].numpy(), np.arange(12).reshape(3, 4)[[2, 0]])
    g[:, 0] = -1
    assert g.numpy()[:, 0].tolist() == [-1, -1, -1] and g.is_global
