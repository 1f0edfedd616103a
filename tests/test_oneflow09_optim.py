"""Optimizer behaviours of OneFlow 0.9 (python/oneflow/nn/optimizer/sgd.py, api/python/framework/tensor.cpp)."""
import warnings

import numpy as np
import pytest

import oneflow as flow


def _param(values):
    return flow.nn.Parameter(flow.tensor(np.array(values, dtype=np.float32)))


def test_sgd_checks_are_oneflows_assertions():
    p = _param([1.0])
    with pytest.raises(AssertionError, match="^Invalid learning rate: -1$"):
        flow.optim.SGD([p], lr=-1)
    with pytest.raises(AssertionError, match="^Invalid momentum: -0.5$"):
        flow.optim.SGD([p], lr=0.1, momentum=-0.5)
    with pytest.raises(AssertionError, match="^Invalid weight_decay: -0.1$"):
        flow.optim.SGD([p], lr=0.1, weight_decay=-0.1)


def test_sgd_nesterov_without_momentum_is_plain_sgd_and_maximize_needs_momentum():
    # OneFlow 0.9: no nesterov check; momentum 0 runs the naive update, which ignores `maximize` (with a warning)
    w0, g = np.array([1.0, -2.0], np.float32), np.array([0.5, 0.25], np.float32)
    p = _param(w0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt = flow.optim.SGD([p], lr=0.1, nesterov=True, maximize=True)
    assert any("Only Momentum > 0.0, param `maximize` takes effect." in str(w.message) for w in caught)
    p.grad = flow.tensor(g)
    opt.step()
    np.testing.assert_allclose(p.numpy(), w0 - 0.1 * g, rtol=1e-6)
    # with momentum, maximize ascends
    q = _param(w0)
    opt = flow.optim.SGD([q], lr=0.1, momentum=0.9, maximize=True)
    q.grad = flow.tensor(g)
    opt.step()
    np.testing.assert_allclose(q.numpy(), w0 + 0.1 * g, rtol=1e-6)


def test_zero_grad_turns_a_global_broadcast_gradient_into_partial_sum_in_place():
    placement = flow.placement("cpu", [0])
    x = flow.nn.Parameter(flow.zeros(4).to_global(placement=placement, sbp=flow.sbp.broadcast))
    x.grad = flow.ones_like(x)
    g = x.grad
    assert g.sbp == (flow.sbp.broadcast,)
    flow.optim.SGD([x], lr=0.1).zero_grad()
    assert x.grad is g and g.sbp == (flow.sbp.partial_sum,)
    np.testing.assert_array_equal(g.numpy(), np.zeros(4, np.float32))
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 3.0, np.float32))
    m = flow.nn.Linear(2, 2).to_global(placement=placement, sbp=flow.sbp.broadcast)
    m(flow.ones(1, 2, placement=placement, sbp=flow.sbp.broadcast)).sum().backward()
    m.zero_grad()
    assert m.weight.grad.sbp == (flow.sbp.partial_sum,)
    np.testing.assert_array_equal(m.weight.grad.numpy(), np.zeros((2, 2), np.float32))
    m.zero_grad(set_to_none=True)
    assert m.weight.grad is None


def test_zero_grad_of_a_local_gradient_zeroes_it_in_place():
    p = _param([1.0, 2.0])
    p.grad = flow.tensor([3.0, 4.0])
    g = p.grad
    flow.optim.SGD([p], lr=0.1).zero_grad()
    assert p.grad is g
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0])
