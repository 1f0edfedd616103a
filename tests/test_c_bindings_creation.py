"""oneflow._C's creation and random names (functional_api.yaml v0.9.0): the local and global overloads, with the
yaml's keyword names; numbers against numpy (the random ones: their ranges and the top-level creators' values
under one seed); two simulated ranks; bad input."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import _C
from simulated_ranks import on_ranks


def test_constants_and_ranges():
    np.testing.assert_array_equal(_C.eye(n=2, m=3, dtype=flow.float32).numpy(), np.eye(2, 3))
    assert _C.eye(3).dtype == flow.float32
    np.testing.assert_array_equal(_C.arange(start=1, end=7, step=2, dtype=flow.int64).numpy(), [1, 3, 5])
    np.testing.assert_array_equal(_C.arange(4).numpy(), np.arange(4))
    c = _C.constant(shape=[2, 3], value=2.5, dtype=flow.float64)
    assert c.dtype == flow.float64
    np.testing.assert_array_equal(c.numpy(), np.full((2, 3), 2.5))
    v = flow.tensor(3.0, requires_grad=True)
    t = _C.tensor_constant(shape=[2, 2], value=v, dtype=flow.float32)
    np.testing.assert_array_equal(t.numpy(), np.full((2, 2), 3.0))
    t.sum().backward()
    assert float(v.grad.numpy()) == 4.0
    e = _C.empty(shape=[3, 2], dtype=flow.int32)
    assert e.shape == (3, 2) and e.dtype == flow.int32


def test_random_creators_draw_the_top_level_values():
    flow.manual_seed(3)
    want = flow.randn(2, 3).numpy()
    flow.manual_seed(3)
    np.testing.assert_array_equal(_C.randn(size=[2, 3]).numpy(), want)
    flow.manual_seed(3)
    want = flow.rand(4).numpy()
    flow.manual_seed(3)
    np.testing.assert_array_equal(_C.rand(size=[4], dtype=flow.float32).numpy(), want)
    r = _C.randint(low=2, high=5, size=[100])
    assert r.numpy().min() >= 2 and r.numpy().max() < 5
    r = _C.randint(3, [50])  # RandInt(high, size)
    assert 0 <= r.numpy().min() and r.numpy().max() < 3
    p = _C.randperm(n=6, dtype=flow.int64)
    assert p.dtype == flow.int64
    np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(6))
    n = _C.normal(mean=2.0, std=0.5, size=[4000])
    assert abs(n.numpy().mean() - 2.0) < 0.05 and abs(n.numpy().std() - 0.5) < 0.05
    out = flow.zeros(3)
    assert _C.normal(0.0, 1.0, 3, out=out) is out
    b = _C.bernoulli(input=flow.tensor([0.0, 1.0, 1.0]), dtype=flow.float32)
    np.testing.assert_array_equal(b.numpy(), [0.0, 1.0, 1.0])
    b = _C.bernoulli(input=flow.zeros(5), p=1.0)
    np.testing.assert_array_equal(b.numpy(), np.ones(5))
    x = flow.zeros(1000)
    assert _C.exponential_(x=x, lambd=2.0) is x
    assert x.numpy().min() >= 0 and abs(x.numpy().mean() - 0.5) < 0.1
    u = flow.zeros(1000)
    _C.uniform_(u, **{"from": -2.0, "to": -1.0})
    assert u.numpy().min() >= -2.0 and u.numpy().max() <= -1.0
    m = _C.multinomial(x=flow.tensor([[0.0, 1.0, 0.0]]), num_samples=2, replacement=True)
    np.testing.assert_array_equal(m.numpy(), [[1, 1]])


def test_global_overloads_on_two_ranks():
    def body():
        p = flow.placement("cpu", [0, 1])
        s0 = [flow.sbp.split(0)]
        flow.manual_seed(1)
        r = _C.randn(size=[4, 2], placement=p, sbp=s0)
        flow.manual_seed(1)
        want = flow.randn(4, 2, placement=p, sbp=s0)
        return (_C.global_arange(start=0, end=6, step=1, placement=p, sbp=s0).numpy(),
                _C.global_constant(shape=[4], value=7, dtype=flow.int32, placement=p, sbp=s0).numpy(),
                _C.global_empty(shape=[4], dtype=flow.float32, placement=p, sbp=s0).shape,
                _C.global_tensor_constant(shape=[2, 2], value=flow.tensor(1.5), dtype=flow.float32, placement=p,
                                          sbp=s0).numpy(),
                _C.eye(4, placement=p, sbp=s0).numpy(), r.numpy(), want.numpy(), r.sbp,
                _C.randperm(5, placement=p, sbp=[flow.sbp.broadcast]).numpy())

    got = on_ranks(2, body)
    for g in got:
        np.testing.assert_array_equal(g[0], np.arange(6))
        np.testing.assert_array_equal(g[1], np.full(4, 7))
        assert g[2] == (4,)
        np.testing.assert_array_equal(g[3], np.full((2, 2), 1.5))
        np.testing.assert_array_equal(g[4], np.eye(4))
        np.testing.assert_array_equal(g[5], g[6])
        assert g[7] == (flow.sbp.split(0),)
        np.testing.assert_array_equal(np.sort(g[8]), np.arange(5))
    np.testing.assert_array_equal(got[0][5], got[1][5])


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"^rand\(\): placement and sbp must be given together$"):
        _C.rand([2], placement=flow.placement("cpu", [0]))
    with pytest.raises(TypeError, match=r"^tensor_constant\(\): argument 'value' must be Tensor, not float$"):
        _C.tensor_constant([2], 1.0, dtype=flow.float32)
    with pytest.raises(TypeError, match=r"^uniform_\(\) missing required argument\(s\): 'to'$"):
        _C.uniform_(flow.zeros(2), **{"from": 0.0})
    with pytest.raises(ValueError, match=r"^bernoulli: p must be in \[0, 1\], got 1.5$"):
        _C.bernoulli(flow.zeros(2), 1.5)
