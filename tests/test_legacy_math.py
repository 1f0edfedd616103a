"""`flow.math` of OneFlow v0.3.4/v0.4.0 beyond the basic functions (oneflow_compat/_api/legacy_math.py), through
the public functions: forward values and gradients against references written here (numpy, Python's math module,
torch where installed), in float32 and float64, on 1 device and on 2 devices (inputs split); OneFlow's argument
rules and errors; and the semantic fixes of issue 20 (integer divide, reciprocal_no_nan at 0, the gradient
through a cast to an integer type).

The ops' SBP signatures and their gradient rules are checked on their own rows by tests/test_validate_signatures.py
and tests/test_gradcheck_all_ops.py.
"""
import math
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import typing as tp
from oneflow_compat.ir import dtypes

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gradcheck as gc  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover - the torch rows skip
    torch = None

_TOL = {np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12}


def surface(body, inputs, devices, splits=None, wrt=None):
    """(outputs, gradients of Σ out·r w.r.t. `wrt`, r) of body(*blobs) run through the framework on `devices`."""
    case = gc.Case("surface", inputs, body=lambda blobs: [body(*blobs)], wrt=wrt, splits=splits)
    fwd = gc.forward_job(case, devices)
    outs = [np.asarray(o) for o in fwd(tuple(case.inputs))]
    if not case.wrt:
        return outs[0], [], None
    sel, rs = gc.loss_weights(case, outs)
    train_outs, grads = gc.framework_grads(case, sel, rs, devices)
    np.testing.assert_array_equal(train_outs[0], outs[0])
    return outs[0], grads, rs[0]


def _vec(fn):
    return lambda x: np.vectorize(fn, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype)


# (name, flow function, numpy forward, numpy derivative, input maker)
UNARY = [
    ("acos", flow.math.acos, np.arccos, lambda x: -1 / np.sqrt(1 - x * x), lambda r: r.uniform(-0.9, 0.9, (6, 5))),
    ("acosh", flow.math.acosh, np.arccosh, lambda x: 1 / np.sqrt(x * x - 1), lambda r: r.uniform(1.1, 3, (6, 5))),
    ("asin", flow.math.asin, np.arcsin, lambda x: 1 / np.sqrt(1 - x * x), lambda r: r.uniform(-0.9, 0.9, (6, 5))),
    ("asinh", flow.math.asinh, np.arcsinh, lambda x: 1 / np.sqrt(1 + x * x), lambda r: r.normal(0, 2, (6, 5))),
    ("atan", flow.math.atan, np.arctan, lambda x: 1 / (1 + x * x), lambda r: r.normal(0, 2, (6, 5))),
    ("atanh", flow.math.atanh, np.arctanh, lambda x: 1 / (1 - x * x), lambda r: r.uniform(-0.9, 0.9, (6, 5))),
    ("cosh", flow.math.cosh, np.cosh, np.sinh, lambda r: r.normal(0, 1, (6, 5))),
    ("sinh", flow.math.sinh, np.sinh, np.cosh, lambda r: r.normal(0, 1, (6, 5))),
    ("tan", flow.math.tan, np.tan, lambda x: 1 / np.cos(x) ** 2, lambda r: r.uniform(-1.2, 1.2, (6, 5))),
    ("erf", flow.math.erf, _vec(math.erf), lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x),
     lambda r: r.normal(0, 1.5, (6, 5))),
    ("erfc", flow.math.erfc, _vec(math.erfc), lambda x: -2 / math.sqrt(math.pi) * np.exp(-x * x),
     lambda r: r.normal(0, 1.5, (6, 5))),
    ("lgamma", flow.math.lgamma, _vec(math.lgamma), None,
     lambda r: np.where(r.random((6, 5)) < 0.3, -r.integers(0, 3, (6, 5)) - r.uniform(0.2, 0.8, (6, 5)),
                        r.uniform(0.2, 6.0, (6, 5)))),
    ("reciprocal_no_nan", flow.math.reciprocal_no_nan, lambda x: np.where(x == 0, 0, 1 / np.where(x == 0, 1, x)),
     lambda x: np.where(x == 0, 0, -1 / np.where(x == 0, 1, x) ** 2),
     lambda r: np.where(r.random((6, 5)) < 0.3, 0.0, r.uniform(0.5, 2, (6, 5)) * r.choice([-1, 1], (6, 5)))),
    ("rint", flow.math.rint, np.rint, None, lambda r: np.round(r.normal(0, 3, (6, 5)) * 2) / 2),
]


@pytest.mark.parametrize("name,fn,ref,deriv,make", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unary_math_forward_and_backward(name, fn, ref, deriv, make, dtype):
    x = make(np.random.default_rng(len(name))).astype(dtype)
    if name == "lgamma" and torch is not None:
        def deriv(v):
            return torch.special.digamma(torch.tensor(v.astype(np.float64))).numpy()
    differentiable = deriv is not None
    for devices in (1, 2):
        y, grads, r = surface(fn, [x], devices, wrt=[0] if differentiable else [])
        assert y.dtype == dtype and y.shape == x.shape
        np.testing.assert_allclose(y, ref(x.astype(np.float64)).astype(dtype), rtol=_TOL[y.dtype],
                                   atol=_TOL[y.dtype], err_msg="%s on %d devices" % (name, devices))
        if differentiable:
            want = (r.astype(np.float64) * deriv(x.astype(np.float64))).astype(dtype)
            np.testing.assert_allclose(grads[0], want, rtol=_TOL[y.dtype] * 10, atol=_TOL[y.dtype],
                                       err_msg="d %s on %d devices" % (name, devices))
    if name == "lgamma" and torch is None:
        pytest.skip("lgamma's gradient reference (digamma) needs torch")


def test_rint_rounds_half_to_even_and_reciprocal_no_nan_gives_zero_at_zero():
    x = np.array([[0.5, 1.5, 2.5, -0.5, -1.5, 0.0]], dtype=np.float32)
    y, _, _ = surface(flow.math.rint, [x], 1, wrt=[])
    np.testing.assert_array_equal(y, [[0, 2, 2, -0, -2, 0]])
    # OneFlow's ReciprocalNoNanFunctor: 0 for 0 (flow.math.reciprocal gives inf there)
    z = np.array([[0.0, 2.0, -4.0, 0.0]])
    y, (g,), r = surface(flow.math.reciprocal_no_nan, [z], 1)
    np.testing.assert_array_equal(y, [[0.0, 0.5, -0.25, 0.0]])
    np.testing.assert_array_equal(g, r * np.array([[0.0, -0.25, -1 / 16, 0.0]]))


BINARY = [
    ("atan2", flow.math.atan2, np.arctan2,
     lambda x, y: (y / (x * x + y * y), -x / (x * x + y * y)), lambda r: r.uniform(0.5, 2, (6, 5)) * r.choice(
         [-1, 1], (6, 5))),
    ("floordiv", flow.math.floordiv, lambda x, y: np.floor(x / y), lambda x, y: (0 * x, 0 * y),
     lambda r: r.uniform(0.5, 2, (6, 5)) * r.choice([-1, 1], (6, 5))),
    ("xdivy", flow.math.xdivy, lambda x, y: np.where(x == 0, 0, x / y),
     lambda x, y: (np.where(x == 0, 0, 1 / y), np.where(x == 0, 0, -x / y ** 2)),
     lambda r: np.where(r.random((6, 5)) < 0.3, 0.0, r.uniform(0.5, 2, (6, 5)))),
    ("xlogy", flow.math.xlogy, lambda x, y: np.where(x == 0, 0, x * np.log(np.where(x == 0, 1, y))),
     lambda x, y: (np.where(x == 0, 0, np.log(y)), np.where(x == 0, 0, x / y)),
     lambda r: np.where(r.random((6, 5)) < 0.3, 0.0, r.uniform(0.5, 2, (6, 5)))),
]


@pytest.mark.parametrize("name,fn,ref,derivs,make", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_binary_math_forward_and_backward(name, fn, ref, derivs, make, dtype):
    rng = np.random.default_rng(len(name))
    x = make(rng).astype(dtype)
    y = np.abs(make(rng)).astype(dtype) + 0.5 if name in ("xdivy", "xlogy") else make(rng).astype(dtype)
    if name == "floordiv":  # x / y kept away from integers
        x = (rng.integers(-4, 4, x.shape) + rng.uniform(0.2, 0.8, x.shape)).astype(dtype)
        y = rng.choice([-1.0, 1.0], x.shape).astype(dtype)
    for devices in (1, 2):
        z, (gx, gy), r = surface(fn, [x, y], devices)
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        np.testing.assert_allclose(z, ref(x64, y64), rtol=_TOL[np.dtype(dtype)], atol=_TOL[np.dtype(dtype)])
        dx, dy = derivs(x64, y64)
        np.testing.assert_allclose(gx, r * dx, rtol=10 * _TOL[np.dtype(dtype)], atol=_TOL[np.dtype(dtype)])
        np.testing.assert_allclose(gy, r * dy, rtol=10 * _TOL[np.dtype(dtype)], atol=_TOL[np.dtype(dtype)])


def test_xdivy_xlogy_are_zero_where_x_is_zero_even_for_y_zero():
    x = np.array([[0.0, 0.0, 2.0]])
    y = np.array([[0.0, 3.0, 4.0]])
    z, _, _ = surface(flow.math.xdivy, [x, y], 1, wrt=[])
    np.testing.assert_array_equal(z, [[0.0, 0.0, 0.5]])
    z, _, _ = surface(flow.math.xlogy, [x, y], 1, wrt=[])
    np.testing.assert_array_equal(z, [[0.0, 0.0, 2 * np.log(4.0)]])


def _build_error(fn, arrays):
    flow.clear_default_session()
    params = [tp.Numpy.Placeholder(a.shape, dtype=dtypes.from_numpy(a.dtype)) for a in arrays]
    job = gc._declare("error_job", lambda args: (fn(*args),), params, 1, "predict")
    return lambda: job(tuple(arrays))


def test_math_errors_follow_oneflow():
    with pytest.raises(ValueError, match="atan2 .*must have one shape.*do not broadcast"):
        _build_error(flow.math.atan2, [np.ones((2, 3)), np.ones((3,))])()
    with pytest.raises(TypeError, match="acos .*input 0 must be a floating blob.*int32"):
        _build_error(flow.math.acos, [np.ones((2, 3), np.int32)])()
    with pytest.raises(ValueError, match="Argument coeffs must be list type"):
        _build_error(lambda x: flow.math.polyval(np.array([1.0]), x), [np.ones((2, 3))])()
    with pytest.raises(ValueError, match="tril .*at least 2 axes"):
        _build_error(flow.math.tril, [np.ones((3,))])()
    with pytest.raises(TypeError, match="in_top_k .*predictions must be float32"):
        _build_error(lambda t, p: flow.math.in_top_k(t, p, 1), [np.zeros(3, np.int32), np.ones((3, 4))])()


# --- composites -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_squared_difference_polyval_logsumexp_std(dtype):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((6, 5)).astype(dtype)
    b = rng.standard_normal((6, 5)).astype(dtype)
    tol = _TOL[np.dtype(dtype)] * 10
    for devices in (1, 2):
        z, (ga, gb), r = surface(flow.math.squared_difference, [a, b], devices)
        np.testing.assert_allclose(z, (a - b) ** 2, rtol=tol)
        np.testing.assert_allclose(ga, r * 2 * (a - b), rtol=tol, atol=tol)
        np.testing.assert_allclose(gb, -r * 2 * (a - b), rtol=tol, atol=tol)
        z, (g,), r = surface(lambda x: flow.math.polyval([2.0, -1.0, 0.5], x), [a], devices)
        np.testing.assert_allclose(z, 2 * a * a - a + 0.5, rtol=tol, atol=tol)
        np.testing.assert_allclose(g, r * (4 * a - 1), rtol=tol, atol=tol)
        # large values: OneFlow's log(Σ exp) would overflow float32 here; the result is the same function
        big = (a * 30 + 60).astype(dtype)
        z, (g,), r = surface(lambda x: flow.math.reduce_logsumexp(x, axis=1), [big], devices)
        m = big.astype(np.float64).max(1, keepdims=True)
        want = (np.log(np.exp(big - m).sum(1, keepdims=True)) + m)[:, 0]
        np.testing.assert_allclose(z, want, rtol=tol)
        softmax = np.exp(big - m) / np.exp(big - m).sum(1, keepdims=True)
        np.testing.assert_allclose(g, r[:, None] * softmax, rtol=tol * 10, atol=tol)
        z, (g,), r = surface(lambda x: flow.math.reduce_std(x, axis=[0], keepdims=True), [a], devices)
        np.testing.assert_allclose(z, a.std(0, keepdims=True), rtol=tol)
        centered = a - a.mean(0)
        np.testing.assert_allclose(g, r * centered / (a.shape[0] * a.std(0)), rtol=tol * 10, atol=tol)


def test_polyval_empty_and_logsumexp_all_axes_and_std_empty_axis():
    x = np.arange(6.0).reshape(2, 3)
    z, _, _ = surface(lambda v: flow.math.polyval([], v), [x], 1, wrt=[])
    np.testing.assert_array_equal(z, np.zeros((2, 3)))
    z, _, _ = surface(lambda v: flow.math.reduce_logsumexp(v), [x], 1, wrt=[])
    np.testing.assert_allclose(z, [np.log(np.exp(x).sum())])
    z, _, _ = surface(lambda v: flow.math.reduce_std(v, axis=[]), [x], 1, wrt=[])
    np.testing.assert_array_equal(z, np.zeros((2, 3)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tril_and_fused_scale_tril(dtype):
    x = np.random.default_rng(4).standard_normal((2, 4, 5)).astype(dtype)
    for devices in (1, 2):
        for diagonal in (-1, 0, 2):
            z, (g,), r = surface(lambda v: flow.math.tril(v, diagonal, fill_value=-7.5), [x], devices)
            want = np.where(np.tril(np.ones((4, 5), bool), diagonal), x, dtype(-7.5))
            np.testing.assert_array_equal(z, want)
            np.testing.assert_array_equal(g, np.where(np.tril(np.ones((4, 5), bool), diagonal), r, 0))
        z, (g,), r = surface(lambda v: flow.math.fused_scale_tril(v, 1, fill_value=0, scale=0.5), [x], devices)
        mask = np.tril(np.ones((4, 5), bool), 1)
        np.testing.assert_allclose(z, np.where(mask, x * dtype(0.5), 0), rtol=_TOL[np.dtype(dtype)])
        np.testing.assert_allclose(g, np.where(mask, r * dtype(0.5), 0), rtol=_TOL[np.dtype(dtype)])
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    z, _, _ = surface(lambda v: flow.nn.tril(v, 0, fill_value=9), [ints], 1, wrt=[])
    np.testing.assert_array_equal(z, np.where(np.tril(np.ones((3, 4), bool)), ints, 9))


def test_in_top_k_counts_strictly_larger_entries():
    pred = np.array([[0.1, 0.5, 0.2, 0.5], [0.3, 0.3, 0.3, 0.3], [1, 2, 3, np.inf], [4, 3, 2, 1],
                     [0.1, 0.2, 0.3, 0.4]], np.float32)
    targets = np.array([1, 2, 0, 0, 7], np.int32)
    for k, want in ((1, [1, 1, 0, 1, 0]), (2, [1, 1, 0, 1, 0]), (4, [1, 1, 0, 1, 0])):
        for devices in (1, 2):
            z, _, _ = surface(lambda t, p: flow.math.in_top_k(t, p, k), [targets, pred], devices, wrt=[])
            assert z.dtype == np.int8
            np.testing.assert_array_equal(z, want)
    # reference: numpy's count of larger entries
    rng = np.random.default_rng(0)
    pred = rng.standard_normal((7, 6)).astype(np.float32)
    targets = rng.integers(0, 6, 7).astype(np.int64)
    z, _, _ = surface(lambda t, p: flow.in_top_k(t, p, 3), [targets, pred], 2, wrt=[])
    larger = (pred > pred[np.arange(7), targets][:, None]).sum(1)
    np.testing.assert_array_equal(z, (larger < 3).astype(np.int8))


# --- segment sums ---------------------------------------------------------------------------------------------------
def _segment_sum_ref(data, ids, num, axis):
    out = np.zeros(data.shape[:axis] + (num,) + data.shape[axis + ids.ndim:], data.dtype)
    moved = np.moveaxis(data.reshape(data.shape[:axis] + (-1,) + data.shape[axis + ids.ndim:]), axis, 0)
    target = np.moveaxis(out, axis, 0)
    for i, s in enumerate(ids.reshape(-1)):
        if s < num:
            target[s] += moved[i]
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unsorted_segment_sums(dtype):
    rng = np.random.default_rng(5)
    data = rng.standard_normal((4, 6, 3)).astype(dtype)
    ids = np.array([0, 2, 2, 5, 1, 0], np.int32)  # 5: beyond 4 segments, ignored
    for devices in (1, 2):
        z, (g,), r = surface(lambda d, i: flow.math.unsorted_segment_sum(d, i, 4, axis=1), [data, ids], devices,
                             splits=[0, None])
        np.testing.assert_allclose(z, _segment_sum_ref(data, ids, 4, 1), rtol=_TOL[np.dtype(dtype)])
        # the gradient gathers dy back by id (0 where the id is beyond the segments)
        want = np.where((ids < 4)[None, :, None], np.take(r, np.minimum(ids, 3), axis=1), 0)
        np.testing.assert_array_equal(g, want)
        like = np.zeros((4, 4, 3), dtype)
        z, (g,), r = surface(lambda d, i, lk: flow.unsorted_segment_sum_like(d, i, lk, axis=1), [data, ids, like],
                             devices, wrt=[0])
        np.testing.assert_allclose(z, _segment_sum_ref(data, ids, 4, 1), rtol=_TOL[np.dtype(dtype)])
    batch_ids = rng.integers(0, 3, (4, 6)).astype(np.int64)
    z, (g,), r = surface(lambda d, i: flow.math.unsorted_batch_segment_sum(d, i, 3), [data, batch_ids], 2)
    want = np.zeros((4, 3, 3), dtype)
    for b in range(4):
        for k in range(6):
            want[b, batch_ids[b, k]] += data[b, k]
    np.testing.assert_allclose(z, want, rtol=_TOL[np.dtype(dtype)])
    np.testing.assert_array_equal(g, np.take_along_axis(r, batch_ids[:, :, None], 1))


def test_negative_segment_id_is_an_error():
    with pytest.raises(ValueError, match="negative segment id -1"):
        _build_error(lambda d, i: flow.math.unsorted_segment_sum(d, i, 3), [np.ones((3, 2)),
                                                                            np.array([0, -1, 2], np.int32)])()


# --- two-stage reductions -------------------------------------------------------------------------------------------
def _two_stage_job(kind, x, devices, axis, keepdims, split_axis):
    """A train job: x (a float64 variable split along split_axis, set by load_variables), y = two_stage_reduce(x),
    loss Σ y·r; returns (y, dx) read by watch_diff."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    fn = getattr(flow.math, "two_stage_reduce_" + kind)
    seen = {}
    y_shape = gc_shape = None

    def keep(g: tp.Numpy):
        seen["g"] = np.array(g)

    ref = (np.max if kind == "max" else np.min)(x, axis=tuple(axis), keepdims=keepdims)
    gc_shape = ref.shape if ref.ndim else (1,)
    r = np.random.default_rng(9).uniform(0.5, 1.5, gc_shape)

    @flow.global_function(type="train")
    def job(rr: tp.Numpy.Placeholder(gc_shape, dtype=flow.float64, batch_axis=None)) -> tp.Numpy:
        v = flow.get_variable("x", shape=x.shape, dtype=flow.float64, initializer=flow.zeros_initializer(),
                              distribute=flow.distribute.split(split_axis))
        flow.watch_diff(v, keep)
        y = fn(v, axis=axis, keepdims=keepdims)
        loss = flow.math.reduce_sum(y * rr)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        return y

    flow.load_variables({"x": x})
    y = job(r)
    return y, seen["g"], ref, r


@pytest.mark.parametrize("kind", ["max", "min"])
def test_two_stage_reduce(kind):
    """Against numpy on 1-4 devices; ties across devices share the gradient evenly (OneFlow's two stages)."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, (5, 6)).astype(np.float64)  # many ties
    for devices in (1, 2, 3, 4):
        for axis, keepdims, split in (([0], False, 0), ([1], True, 1), ([0, 1], False, 0), (None, True, 1)):
            y, g, ref, r = _two_stage_job(kind, x, devices, axis if axis is not None else [0, 1], keepdims, split)
            np.testing.assert_array_equal(y, ref.reshape(y.shape))
            full_axes = tuple(axis) if axis is not None else (0, 1)
            kept = (np.max if kind == "max" else np.min)(x, axis=full_axes, keepdims=True)
            hit = (x == kept)
            count = hit.sum(axis=full_axes, keepdims=True)
            want = r.reshape(kept.shape) * hit / count
            np.testing.assert_allclose(g, want, rtol=1e-12, err_msg="%s devices, axis %s" % (devices, axis))


def test_two_stage_reduce_needs_a_split_input():
    flow.clear_default_session()

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        return flow.math.two_stage_reduce_max(x.with_distribute(flow.distribute.broadcast()), axis=0)

    with pytest.raises(AssertionError, match="must be split along one of the reduced axes"):
        job(np.ones((4, 3), np.float32))


def test_broadcast_to_compatible_with_and_reduced_shape_elem_cnt():
    a = np.random.default_rng(1).standard_normal((1, 5))
    b = np.zeros((4, 1))
    for devices in (1, 2):
        z, (g,), r = surface(lambda x, y: flow.math.broadcast_to_compatible_with(x, [y]), [a, b], devices,
                             wrt=[0])
        np.testing.assert_array_equal(z, np.broadcast_to(a, (4, 5)))
        np.testing.assert_allclose(g, r.sum(0, keepdims=True))
        z, _, _ = surface(lambda x: flow.math.reduced_shape_elem_cnt(x, axis=[0], dtype=flow.int64),
                          [np.zeros((6, 7))], devices, wrt=[])
        assert z.dtype == np.int64 and z.tolist() == [6]
        z, _, _ = surface(lambda x: flow.elem_cnt(x), [np.zeros((6, 7))], devices, wrt=[])
        assert z.dtype == np.int32 and z.tolist() == [42]


def test_sigmoid_v2_tanh_v2_and_the_exported_grads(capsys):
    x = np.linspace(-2, 2, 12).reshape(3, 4)
    z, _, _ = surface(flow.math.sigmoid_v2, [x], 1, wrt=[])
    np.testing.assert_allclose(z, 1 / (1 + np.exp(-x)), rtol=1e-14)
    z, _, _ = surface(flow.math.tanh_v2, [x], 1, wrt=[])
    np.testing.assert_allclose(z, np.tanh(x), rtol=1e-14)
    assert "flow.math.tanh_v2 has been deprecated" in capsys.readouterr().out
    y = 1 / (1 + np.exp(-x))
    dy = np.cos(x)
    z, _, _ = surface(lambda a, b: flow.math.sigmoid_grad(a, b), [y, dy], 1, wrt=[])
    np.testing.assert_allclose(z, dy * y * (1 - y), rtol=1e-14)
    z, _, _ = surface(lambda a, b: flow.math.gelu_grad(a, b), [x, dy], 1, wrt=[])
    cdf = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    np.testing.assert_allclose(z, dy * (cdf + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)), rtol=1e-12)


# --- semantic fixes ---------------------------------------------------------------------------------------------------
def test_integer_divide_is_integer_division():
    """OneFlow's broadcast_div kernel divides int32 blobs as C++ does: truncated toward zero, int32 result."""
    a = np.array([[7, -7, 7, -7, 9]], np.int32)
    b = np.array([[2, 2, -2, -2, 3]], np.int32)
    for devices in (1, 2):
        z, _, _ = surface(flow.math.divide, [a, b], devices, wrt=[])
        assert z.dtype == np.int32
        np.testing.assert_array_equal(z, [[3, -3, -3, 3, 3]])
        z, _, _ = surface(lambda x: x / 2, [a], devices, wrt=[])
        assert z.dtype == np.int32
        np.testing.assert_array_equal(z, [[3, -3, 3, -3, 4]])
        z, _, _ = surface(lambda x: flow.math.divide(20, x), [b], devices, wrt=[])
        np.testing.assert_array_equal(z, [[10, 10, -10, -10, 6]])


def test_divide_by_scalar_zero_and_scalar_by_zero_follow_oneflow():
    """math_ops.divide: y = 0 makes the scalar factor 0; a number over a blob uses reciprocal_no_nan."""
    x = np.array([[1.0, 0.0, -2.0]])
    z, _, _ = surface(lambda v: flow.math.divide(v, 0), [x], 1, wrt=[])
    np.testing.assert_array_equal(z, [[0.0, 0.0, -0.0]])
    z, _, _ = surface(lambda v: flow.math.divide(3.0, v), [x], 1, wrt=[])
    np.testing.assert_array_equal(z, [[3.0, 0.0, -1.5]])


def test_cast_to_an_integer_type_passes_the_gradient():
    """OneFlow's cast grad casts dy back to the input's dtype whatever the dtypes: a float -> int32 -> float chain
    passes the (truncated) gradient back to x instead of stopping it."""
    x = np.array([[0.7, -1.2, 2.5, 3.9]])

    def body(v):
        return flow.cast(flow.cast(v, flow.int32), flow.float64) * 3.0

    case = gc.Case("cast", [x], body=lambda blobs: [body(*blobs)])
    r = [np.array([[1.0, 1.0, 2.0, 2.0]])]
    (y,), (g,) = gc.framework_grads(case, [0], r)
    np.testing.assert_array_equal(y, [[0.0, -3.0, 6.0, 9.0]])
    np.testing.assert_array_equal(g, [[3.0, 3.0, 6.0, 6.0]])
    # a fractional gradient is truncated on its integer leg, as OneFlow's int32 cast of dy does
    r = [np.array([[0.5, 1.5, -2.5, 1.0]])]
    (y,), (g,) = gc.framework_grads(case, [0], r)
    np.testing.assert_array_equal(g, [[1.0, 4.0, -7.0, 3.0]])


# --- maximum / minimum: a tie's gradient goes wholly to y (v0.3.4/v0.4.0 kernels; the 0.9 ops split it) ----------
@pytest.mark.parametrize("kind", ["maximum", "minimum"])
def test_legacy_maximum_minimum_tie_gradient_goes_to_y(kind):
    flow.clear_default_session()
    seen = {}
    x0 = np.array([1.0, 2.0, 3.0, 4.0])
    y0 = np.array([1.0, 5.0, 3.0, 0.0])  # ties at 0 and 2

    @flow.global_function(type="train")
    def job() -> tp.Numpy:
        vx = flow.get_variable("vx", shape=(4,), dtype=flow.float64, initializer=flow.zeros_initializer())
        vy = flow.get_variable("vy", shape=(4,), dtype=flow.float64, initializer=flow.zeros_initializer())
        flow.watch_diff(vx, lambda g: seen.__setitem__("x", np.array(g)))
        flow.watch_diff(vy, lambda g: seen.__setitem__("y", np.array(g)))
        z = getattr(flow.math, kind)(vx, vy)
        loss = flow.math.reduce_sum(z * 1.0)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        return z

    flow.load_variables({"vx": x0, "vy": y0})
    z = job()
    pick_x = x0 > y0 if kind == "maximum" else x0 < y0  # strict: ties are y's
    np.testing.assert_array_equal(z, np.where(pick_x | (x0 == y0), x0, y0))
    np.testing.assert_array_equal(seen["x"], pick_x.astype(float))
    np.testing.assert_array_equal(seen["y"], (~pick_x).astype(float))


@pytest.mark.parametrize("kind", ["maximum", "minimum"])
def test_global_api_maximum_minimum_tie_gradient_is_split(kind):
    x0 = np.array([1.0, 2.0, 3.0, 4.0])
    y0 = np.array([1.0, 5.0, 3.0, 0.0])
    pick_x = x0 > y0 if kind == "maximum" else x0 < y0
    a = flow.tensor(x0, requires_grad=True)
    b = flow.tensor(y0, requires_grad=True)
    getattr(flow, kind)(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), pick_x + 0.5 * (x0 == y0))
