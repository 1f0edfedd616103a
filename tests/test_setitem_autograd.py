"""`x[key] = value` while autograd records: a recorded op, as OneFlow's slice_update / tensor_scatter_nd_update
(the overwritten positions pass no gradient to x's history; value gets the gradient of what it filled).
Hand-computed gradients; torch as a second reference where installed."""
import numpy as np
import pytest

import oneflow_compat as flow
from tests.simulated_ranks import on_ranks

W = np.arange(12.0).reshape(3, 4)


def _step(key, value_shape=None, number=None):
    a = flow.ones(3, 4, requires_grad=True)
    x = a * 2
    v = flow.ones(*value_shape, requires_grad=True) if value_shape is not None else None
    x[key] = v * 3 if v is not None else number
    (x * flow.tensor(W, dtype=flow.float32)).sum().backward()
    return x, a.grad.numpy(), None if v is None else v.grad.numpy()


def test_a_row_overwritten_by_a_tensor():
    x, ga, gv = _step(1, (4,))
    want_x = np.full((3, 4), 2.0)
    want_x[1] = 3.0
    np.testing.assert_array_equal(x.numpy(), want_x)
    want_ga = 2 * W
    want_ga[1] = 0  # the overwritten row passes no gradient to a
    np.testing.assert_array_equal(ga, want_ga)
    np.testing.assert_array_equal(gv, 3 * W[1])


def test_a_broadcast_value_sums_its_gradient():
    _, ga, gv = _step((slice(None), 2), (1,))
    want_ga = 2 * W
    want_ga[:, 2] = 0
    np.testing.assert_array_equal(ga, want_ga)
    np.testing.assert_array_equal(gv, [3 * W[:, 2].sum()])


def test_a_number_and_an_advanced_index():
    x, ga, _ = _step(1, number=5.0)
    assert x.numpy()[1].tolist() == [5.0] * 4
    assert ga[1].tolist() == [0.0] * 4 and ga[0].tolist() == (2 * W[0]).tolist()
    x, ga, gv = _step(flow.tensor([0, 2]), (2, 4))
    want_ga = 2 * W
    want_ga[[0, 2]] = 0
    np.testing.assert_array_equal(ga, want_ga)
    np.testing.assert_array_equal(gv, 3 * W[[0, 2]])


def test_a_value_with_grad_into_a_constant_makes_it_record():
    x = flow.zeros(4)
    v = flow.tensor([2.0], requires_grad=True)
    x[1:3] = v
    assert x.requires_grad
    (x * flow.tensor([1.0, 10.0, 100.0, 1000.0])).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [110.0])


def test_a_leaf_that_requires_grad_is_refused():
    a = flow.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        a[0] = 1.0


def test_without_gradients_the_storage_is_written():
    x = flow.ones(3, 4)
    row = x[1]  # a view: it sees the write
    x[1, 1:3] = flow.tensor([7.0, 8.0])
    assert row.numpy().tolist() == [1.0, 7.0, 8.0, 1.0]


def test_against_torch():
    torch = pytest.importorskip("torch")
    cases = [((slice(0, 2), 1), (slice(0, 2), 1), (2,)), (flow.tensor([2, 0]), torch.tensor([2, 0]), (4,))]
    for key, tkey, shape in cases:
        got = _step(key, shape)
        a = torch.ones(3, 4, requires_grad=True)
        x = a * 2
        v = torch.ones(*shape, requires_grad=True)
        x[tkey] = v * 3
        (x * torch.tensor(W, dtype=torch.float32)).sum().backward()
        np.testing.assert_array_equal(got[0].numpy(), x.detach().numpy())
        np.testing.assert_array_equal(got[1], a.grad.numpy())
        np.testing.assert_array_equal(got[2], v.grad.numpy())


def test_a_global_tensor_on_two_ranks():
    def body():
        p = flow.placement("cpu", ranks=[0, 1])
        a = flow.ones(4, 2, placement=p, sbp=flow.sbp.split(0), requires_grad=True)
        x = a * 2
        v = flow.ones(2, placement=p, sbp=flow.sbp.broadcast, requires_grad=True)
        x[3] = v * 3
        w = flow.tensor(np.arange(8.0).reshape(4, 2), dtype=flow.float32, placement=p, sbp=flow.sbp.broadcast)
        (x * w).sum().backward()
        return x.numpy(), a.grad.numpy(), v.grad.numpy()

    wx = np.full((4, 2), 2.0)
    wx[3] = 3.0
    wa = 2 * np.arange(8.0).reshape(4, 2)
    wa[3] = 0
    for x, ga, gv in on_ranks(2, body):
        np.testing.assert_array_equal(x, wx)
        np.testing.assert_array_equal(ga, wa)
        np.testing.assert_array_equal(gv, 3 * np.arange(8.0).reshape(4, 2)[3])
