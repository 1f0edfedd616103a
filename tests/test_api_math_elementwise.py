"""api-math: OneFlow 0.9's elementwise and reduction names of oneflow.rst / tensor.rst (aliases, addcmul/addcdiv,
clamp_min/max, in-place floor_/sin_, log10, trunc, logical_xor, isclose/allclose/equal, the activations bound at
the top, median, nansum, hann_window, is_nonzero): numbers against numpy / torch, gradients, a global tensor, an
nn.Graph, and the exact errors."""
import math

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.nn.functional as nnF
from simulated_ranks import on_ranks

try:
    import torch
except ImportError:  # the torch comparisons skip; the numpy ones run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

RNG = np.random.RandomState(7)
A = RNG.randn(3, 4).astype(np.float32)
B = RNG.randn(3, 4).astype(np.float32)
C = (RNG.rand(3, 4).astype(np.float32) + 0.5) * np.sign(RNG.randn(3, 4)).astype(np.float32)


# --- aliases ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alias,name,np_fn,lo,hi", [
    ("arccos", "acos", np.arccos, -0.9, 0.9), ("arcsin", "asin", np.arcsin, -0.9, 0.9),
    ("arctan", "atan", np.arctan, -3, 3), ("arcsinh", "asinh", np.arcsinh, -3, 3),
    ("arccosh", "acosh", np.arccosh, 1.1, 3), ("arctanh", "atanh", np.arctanh, -0.9, 0.9)])
def test_arc_aliases_are_the_same_functions(alias, name, np_fn, lo, hi):
    assert getattr(flow, alias) is getattr(flow, name)
    assert getattr(flow.Tensor, alias) is getattr(flow.Tensor, name)
    a = np.linspace(lo, hi, 7).astype(np.float32)
    np.testing.assert_allclose(getattr(flow, alias)(flow.tensor(a)).numpy(), np_fn(a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(getattr(flow.tensor(a), alias)().numpy(), np_fn(a), rtol=1e-5, atol=1e-6)


def test_activations_at_the_top_are_the_nn_functional_ones():
    for name in ("gelu", "mish", "silu", "softplus", "selu", "softsign", "quick_gelu"):
        assert getattr(flow, name) is getattr(nnF, name), name
    assert flow._C.gelu_with_approximate is nnF.gelu and flow._C.reduce_nansum is flow.nansum


# --- numbers and gradients against torch -------------------------------------------------------------------------
def _grad_pair(flow_fn, torch_fn, *arrays):
    xs = [flow.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, t = flow_fn(*xs), torch_fn(*ts)
    np.testing.assert_allclose(y.numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    w = np.asarray(RNG.randn(*t.shape), np.float32)
    (y * flow.tensor(w)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    for x, tt in zip(xs, ts):
        if tt.grad is None or x.grad is None:  # an input the function does not read, or a zero gradient
            assert not (x.grad.numpy().any() if x.grad is not None else False)
            assert tt.grad is None or not tt.grad.numpy().any()
            continue
        np.testing.assert_allclose(x.grad.numpy(), tt.grad.numpy(), rtol=1e-4, atol=1e-5)


CASES = [
    ("addcmul", lambda a, b, c: flow.addcmul(a, b, c, value=0.5), lambda a, b, c: torch.addcmul(a, b, c, value=0.5)),
    ("addcdiv", lambda a, b, c: flow.addcdiv(a, b, c, value=-2), lambda a, b, c: torch.addcdiv(a, b, c, value=-2)),
    ("Tensor.addcmul", lambda a, b, c: a.addcmul(b, c), lambda a, b, c: a.addcmul(b, c)),
    ("Tensor.addcdiv", lambda a, b, c: a.addcdiv(b, c, value=3), lambda a, b, c: a.addcdiv(b, c, value=3)),
    ("clamp_min", lambda a, b, c: flow.clamp_min(a, 0.1) + b * 0, lambda a, b, c: torch.clamp_min(a, 0.1) + b * 0),
    ("clamp_max", lambda a, b, c: flow.clamp_max(a, 0.1), lambda a, b, c: torch.clamp_max(a, 0.1)),
    ("log10", lambda a, b, c: flow.log10(c.abs()), lambda a, b, c: torch.log10(c.abs())),
    ("gelu", lambda a, b, c: flow.gelu(a), lambda a, b, c: torch.nn.functional.gelu(a)),
    ("mish", lambda a, b, c: a.mish(), lambda a, b, c: torch.nn.functional.mish(a)),
    ("silu", lambda a, b, c: a.silu(), lambda a, b, c: torch.nn.functional.silu(a)),
    ("softplus", lambda a, b, c: a.softplus(beta=2, threshold=1),
     lambda a, b, c: torch.nn.functional.softplus(a, beta=2, threshold=1)),
    ("selu", lambda a, b, c: flow.selu(a), lambda a, b, c: torch.selu(a)),
    ("softsign", lambda a, b, c: flow.softsign(a), lambda a, b, c: torch.nn.functional.softsign(a)),
    ("quick_gelu", lambda a, b, c: flow.quick_gelu(a), lambda a, b, c: a * torch.sigmoid(1.702 * a)),
    ("trunc", lambda a, b, c: flow.trunc(a * 3) + b, lambda a, b, c: torch.trunc(a * 3) + b),
    ("median", lambda a, b, c: flow.median(a), lambda a, b, c: torch.median(a)),
    ("median dim", lambda a, b, c: flow.median(a, 1)[0], lambda a, b, c: torch.median(a, 1)[0]),
    ("Tensor.median dim 0 keepdim", lambda a, b, c: a.median(0, True).values,
     lambda a, b, c: a.median(0, True).values),
    ("nansum", lambda a, b, c: flow.nansum(flow.log(a)), lambda a, b, c: torch.nansum(torch.log(a))),
    ("Tensor.nansum dim", lambda a, b, c: flow.log(a).nansum(1, keepdim=True),
     lambda a, b, c: torch.log(a).nansum(1, keepdim=True)),
    ("negative", lambda a, b, c: a.negative(), lambda a, b, c: a.negative()),
]


@needs_torch
@pytest.mark.filterwarnings("ignore:invalid value encountered in log")  # (nansum's NaNs are made by log)
@pytest.mark.parametrize("name,ff,ft", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, ff, ft):
    _grad_pair(ff, ft, A, B, C)


@needs_torch
def test_median_indices_and_hann_window_match_torch():
    a = RNG.randn(4, 7).astype(np.float32)
    v, i = flow.median(flow.tensor(a), dim=-1)
    tv, ti = torch.median(torch.tensor(a), dim=-1)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    assert i.dtype == flow.int64
    for n in (1, 2, 8):
        for periodic in (True, False):
            np.testing.assert_allclose(flow.hann_window(n, periodic).numpy(),
                                       torch.hann_window(n, periodic).numpy(), atol=1e-6)
    w = flow.hann_window(5, dtype=flow.float64, requires_grad=True)
    assert w.dtype == flow.float64 and w.requires_grad


# --- numbers against numpy ---------------------------------------------------------------------------------------
def test_in_place_forms_write_into_the_tensor():
    a = flow.tensor(A.copy())
    assert flow.floor_(a) is a
    np.testing.assert_array_equal(a.numpy(), np.floor(A))
    b = flow.tensor(A.copy())
    assert b.sin_() is b
    np.testing.assert_allclose(b.numpy(), np.sin(A), rtol=1e-6)
    c = flow.tensor(A.copy())
    assert c.addcmul_(flow.tensor(B), flow.tensor(C), value=2) is c
    np.testing.assert_allclose(c.numpy(), A + 2 * B * C, rtol=1e-6)
    d = flow.tensor(A.copy())
    d.addcdiv_(flow.tensor(B), flow.tensor(C))
    np.testing.assert_allclose(d.numpy(), A + B / C, rtol=1e-5)
    e = flow.tensor(A.copy())
    flow._C.clamp_min_(e, 0.0)
    np.testing.assert_array_equal(e.numpy(), np.maximum(A, 0))


def test_logic_and_closeness_match_numpy():
    x = np.array([0, 1, 2, 0, -3])
    y = np.array([0, 0, 5, 1, -1])
    np.testing.assert_array_equal(flow.logical_xor(flow.tensor(x), flow.tensor(y)).numpy(), np.logical_xor(x, y))
    np.testing.assert_array_equal(flow.tensor(x).logical_xor(1).numpy(), np.logical_xor(x, 1))
    np.testing.assert_array_equal(flow.logical_xor(flow.tensor(x), 0).numpy(), np.logical_xor(x, 0))
    assert flow.logical_xor(flow.tensor(x), flow.tensor(y)).dtype == flow.bool
    a = np.array([1.0, 1.0 + 1e-6, np.inf, -np.inf, np.nan, 2.0, 0.0], np.float32)
    b = np.array([1.0, 1.0, np.inf, np.inf, np.nan, 2.1, 1e-9], np.float32)
    for kw in ({}, {"equal_nan": True}, {"atol": 0.2, "rtol": 0.0}):
        np.testing.assert_array_equal(flow.isclose(flow.tensor(a), flow.tensor(b), **kw).numpy(),
                                      np.isclose(a, b, **kw))
        np.testing.assert_array_equal(flow.tensor(a).isclose(flow.tensor(b), **kw).numpy(), np.isclose(a, b, **kw))
    assert flow.tensor(A).allclose(flow.tensor(A * (1 + 1e-6)))
    assert not flow.tensor(A).allclose(flow.tensor(A + 1e-2))
    assert flow.tensor(A).allclose(flow.tensor(A + 1e-2), 0.02)  # OneFlow's Tensor.allclose: atol before rtol
    assert flow.tensor(A).equal(flow.tensor(A)) is True
    assert flow.tensor(A).equal(flow.tensor(A[:2])) is False
    assert flow.tensor(A).equal(flow.tensor(A + 1)) is False
    np.testing.assert_array_equal(flow.trunc(flow.tensor([-2.7, -0.2, 0.0, 1.9])).numpy(), [-2.0, -0.0, 0.0, 1.0])


def test_nansum_median_and_is_nonzero_match_numpy():
    a = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 4.0]], np.float32)
    assert flow.nansum(flow.tensor(a)).item() == pytest.approx(np.nansum(a))
    np.testing.assert_array_equal(flow.nansum(flow.tensor(a), 0).numpy(), np.nansum(a, 0))
    np.testing.assert_array_equal(flow.nansum(flow.tensor([[1, 2], [3, 4]]), 1).numpy(), [3, 7])
    b = RNG.randn(5, 6).astype(np.float32)
    assert flow.median(flow.tensor(b)).item() == np.sort(b.reshape(-1))[(b.size - 1) // 2]
    v, i = flow.tensor(b).median(dim=0, keepdim=True)
    assert tuple(v.shape) == (1, 6)
    np.testing.assert_array_equal(v.numpy()[0], np.sort(b, 0)[2])
    np.testing.assert_array_equal(np.take_along_axis(b, i.numpy(), 0), v.numpy())
    assert math.isnan(flow.median(flow.tensor([])).item())
    assert flow.is_nonzero(flow.tensor([1.5])) and not flow.is_nonzero(flow.tensor([0.0]))
    assert flow.is_nonzero(flow.tensor([3]))
    np.testing.assert_allclose(flow.hann_window(6).numpy(), 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(6) / 6),
                               atol=1e-7)


# --- global tensors and nn.Graph -------------------------------------------------------------------------------
def test_global_tensors_give_the_local_numbers():
    p = flow.placement("cpu", ranks=[0])
    a = flow.tensor(A).to_global(placement=p, sbp=flow.sbp.split(0))
    b = flow.tensor(B).to_global(placement=p, sbp=flow.sbp.broadcast)
    c = flow.tensor(C).to_global(placement=p, sbp=flow.sbp.split(1))
    checks = [
        (flow.addcdiv(a, b, c, value=0.5), A + 0.5 * B / C),
        (flow.log10(c.abs()), np.log10(np.abs(C))),
        (flow.median(a, 1).values, np.sort(A, 1)[:, 1]),
        (flow.nansum(a, 0), A.sum(0)),
        (flow.trunc(a * 3), np.trunc(A * 3)),
        (flow.logical_xor(a > 0, b > 0), np.logical_xor(A > 0, B > 0)),
        (flow.isclose(a, b), np.isclose(A, B)),
    ]
    for out, want in checks:
        assert out.is_global
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    w = flow.hann_window(4, placement=p, sbp=flow.sbp.broadcast)
    assert w.is_global and w.sbp == (flow.sbp.broadcast,)
    g = flow.tensor(A, requires_grad=True)
    ga = g.to_global(placement=p, sbp=flow.sbp.split(0))
    flow.median(ga, 1).values.sum().backward()
    want = np.zeros_like(A)
    np.put_along_axis(want, np.argsort(A, 1, kind="stable")[:, 1:2], 1.0, 1)
    np.testing.assert_array_equal(g.grad.numpy(), want)


def test_compositions_run_inside_nn_graph():
    def f(x, y):
        return flow.cat([flow.addcmul(x, x, y), flow.log10(y.abs()), flow.trunc(x * 2),
                         flow.median(x, 0, keepdim=True)[0], flow.nansum(x, 0, keepdim=True)], 0)

    class G(flow.nn.Graph):
        def build(self, x, y):
            return f(x, y)

    x, y = flow.tensor(A), flow.tensor(C)
    np.testing.assert_allclose(G()(x, y).numpy(), f(x, y).numpy(), rtol=1e-6)


# --- errors ---------------------------------------------------------------------------------------------------
def test_bad_input_gets_oneflows_errors():
    with pytest.raises(IndexError, match=r"^IndexError: Expected reduction dim 1 to have non-zero size\.$"):
        flow.median(flow.zeros(3, 0), 1)
    with pytest.raises(IndexError, match=r"median\(\): Dimension out of range"):
        flow.median(flow.zeros(3), 2)
    with pytest.raises(RuntimeError, match=r"^hann_window expects floating point dtypes, got: oneflow\.int32$"):
        flow.hann_window(4, dtype=flow.int32)
    with pytest.raises(RuntimeError, match=r"^bool value of Tensor with more than one value is ambiguous$"):
        flow.is_nonzero(flow.ones(2))
    with pytest.raises(RuntimeError, match=r"^bool value of Tensor with no values is ambiguous$"):
        flow.is_nonzero(flow.ones(0))
    with pytest.raises(TypeError, match=r"logical_xor\(\): expected a Tensor argument"):
        flow.logical_xor(1, 0)
    with pytest.raises(RuntimeError, match=r"addcmul_\(\): the result's shape \(3, 4\) does not match"):
        flow.ones(4).addcmul_(flow.ones(3, 1), flow.ones(4))
    with pytest.raises(RuntimeError, match=r"sin_\(\): .*oneflow\.int64 tensor is floating"):
        flow.tensor([1, 2]).sin_()


# --- two simulated ranks ------------------------------------------------------------------------------------------
def test_two_ranks_split_along_the_reduced_dim_give_one_ranks_numbers():
    a = RNG.randn(4, 6).astype(np.float32)
    a[1, 2] = np.nan
    cc = RNG.rand(4, 6).astype(np.float32) + 0.5

    def body():
        p = flow.placement("cpu", [0, 1])
        x = flow.tensor(np.nan_to_num(a), placement=p, sbp=flow.sbp.split(1), requires_grad=True)
        n = flow.tensor(a, placement=p, sbp=flow.sbp.split(0))
        b = flow.tensor(cc, placement=p, sbp=flow.sbp.broadcast)
        med = flow.median(x, 1)
        med.values.sum().backward()
        return (med.values.numpy(), med.indices.numpy(), flow.median(x).numpy(), flow.nansum(n, 0).numpy(),
                flow.nansum(n).numpy(), flow.addcdiv(x, x, b, value=0.5).numpy(), flow.log10(b.abs()).numpy(),
                flow.isclose(x, x + 1e-9).numpy(), x.grad.numpy(),
                flow.hann_window(6, placement=p, sbp=flow.sbp.split(0)).numpy())

    full = np.nan_to_num(a)
    order = np.argsort(full, 1, kind="stable")
    want_grad = np.zeros_like(full)
    np.put_along_axis(want_grad, order[:, 2:3], 1.0, 1)
    for got in on_ranks(2, body):
        np.testing.assert_array_equal(got[0], np.sort(full, 1)[:, 2])
        np.testing.assert_array_equal(np.take_along_axis(full, got[1][:, None], 1)[:, 0], got[0])
        assert got[2] == np.sort(full.reshape(-1))[11]
        np.testing.assert_allclose(got[3], np.nansum(a, 0), rtol=1e-6)
        np.testing.assert_allclose(got[4], np.nansum(a), rtol=1e-5)
        np.testing.assert_allclose(got[5], full + 0.5 * full / cc, rtol=1e-5)
        np.testing.assert_allclose(got[6], np.log10(np.abs(cc)), rtol=1e-5)
        assert got[7].all()
        np.testing.assert_array_equal(got[8], want_grad)
        np.testing.assert_allclose(got[9], 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(6) / 6), atol=1e-7)
