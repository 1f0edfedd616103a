"""Array ops (ops/shape_ops.py) and their legacy functions (array_api.py).

The ops' declared SBP signatures and gradient rules are checked from their rows in oneflow_compat/ops/examples.py
(tests/test_validate_signatures.py, tests/test_gradcheck_all_ops.py). Here: the public functions give numpy's
results on 1, 2 and 3 devices, follow the legacy argument rules, and their composite gradients (variable + one SGD
step) equal central differences.
"""
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat._api import array_api as A
from oneflow_compat import typing as tp
from oneflow_compat.ir import dtypes

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gradcheck as gc  # noqa: E402


# --- the public functions, forward, on 1, 2 and 3 devices ------------------------------------------------------
def _run(fn, arrays, devices, splits=None):
    """fn(*blobs) in a predict job; inputs fed as placeholders split on axis 0 (or `splits`) on >1 devices."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    splits = splits or [0] * len(arrays)
    params = [tp.Numpy.Placeholder(a.shape, dtype=dtypes.from_numpy(a.dtype), batch_axis=s)
              for a, s in zip(arrays, splits)]
    out = gc._declare("array_job", lambda args: (fn(*args),), params, 1, "predict")(tuple(arrays))
    return out[0]


R = np.random.default_rng(7)
X345 = R.standard_normal((3, 4, 5)).astype(np.float32)
X645 = R.standard_normal((6, 4, 5)).astype(np.float32)
IDX = np.array([[3, 0], [2, 2], [1, 3]], dtype=np.int32)

FORWARD = [
    ("transpose", lambda x: A.transpose(x, perm=[2, 0, 1]), lambda x: x.transpose(2, 0, 1), [X645]),
    ("transpose negative perm", lambda x: A.transpose(x, [-1, 1, 0]), lambda x: x.transpose(2, 1, 0), [X345]),
    ("concat axis 1", lambda a, b: A.concat([a, b], axis=1), lambda a, b: np.concatenate([a, b], 1),
     [X645, X645[:, :2] * 2]),
    ("concat axis -1 values=", lambda a, b: A.concat(values=[a, b, a], axis=-1),
     lambda a, b: np.concatenate([a, b, a], -1), [X345, X345[..., :1]]),
    ("concat axis 0", lambda a, b: A.concat([a, b], axis=0), lambda a, b: np.concatenate([a, b]), [X645, X345]),
    ("stack", lambda a, b: A.stack([a, b], axis=2), lambda a, b: np.stack([a, b], 2), [X645, -X645]),
    ("stack axis -1", lambda a, b: A.stack([a, b], axis=-1), lambda a, b: np.stack([a, b], -1), [X345, X345 + 1]),
    ("slice", lambda x: A.slice(x, [None, 1, -3], [None, 2, 2]), lambda x: x[:, 1:3, 2:4], [X645]),
    ("slice size -1 and to the end", lambda x: A.slice(x, [1, 0, 3], [-1, 4, None]), lambda x: x[1:, :, 3:],
     [X645]),
    ("slice_v2", lambda x: A.slice_v2(x, [(None, None, None), (0, 4, 2), (None, None, -2)]),
     lambda x: x[:, 0:4:2, ::-2], [X645]),
    ("slice_v2 short list", lambda x: A.slice_v2(x, [(1, -1, None)]), lambda x: x[1:-1], [X645]),
    ("reverse", lambda x: A.reverse(x, [0, -1]), lambda x: x[::-1, :, ::-1], [X645]),
    ("expand_dims", lambda x: A.expand_dims(x, 1), lambda x: x[:, None], [X645]),
    ("expand_dims -1", lambda x: A.expand_dims(x, -1), lambda x: x[..., None], [X345]),
    ("squeeze", lambda x: A.squeeze(A.expand_dims(x, 2), axis=[-2]), lambda x: x, [X645]),
    ("squeeze all ones", lambda x: A.squeeze(flow.reshape(x, (1, 6, 1, 20, 1))), lambda x: x.reshape(6, 20),
     [X645]),
    ("flatten", lambda x: A.flatten(x, start_dim=1), lambda x: x.reshape(6, 20), [X645]),
    ("flatten all", lambda x: A.flatten(x), lambda x: x.reshape(-1), [X345]),
    ("gather axis 0", lambda p, i: A.gather(p, i), lambda p, i: p[i], [X645, IDX]),
    ("gather axis 1", lambda p, i: A.gather(p, i, axis=1), lambda p, i: np.take(p, i, axis=1),
     [X645, IDX]),
    ("gather batch_dims", lambda p, i: A.gather(p, i, batch_dims=1),
     lambda p, i: np.take_along_axis(p, i[:, :, None].astype(np.int64).repeat(5, 2), 1), [X345, IDX]),
    ("one_hot", lambda i: A.one_hot(i, depth=5), lambda i: np.eye(5, dtype=np.float32)[i], [IDX]),
    ("one_hot axis 0 int", lambda i: A.one_hot(i, depth=6, on_value=3, off_value=-1, axis=0, dtype=flow.int32),
     lambda i: np.moveaxis(np.where(np.eye(6, dtype=bool)[i], 3, -1).astype(np.int32), -1, 0), [IDX]),
    ("pad", lambda x: A.pad(x, [[0, 0], [1, 2], [0, 1]], constant_value=1.5),
     lambda x: np.pad(x, [(0, 0), (1, 2), (0, 1)], constant_values=1.5), [X645]),
    ("where", lambda c, x, y: A.where(c, x, y), lambda c, x, y: np.where(c != 0, x, y),
     [(X645 > 0).astype(np.int32), X645, -2 * X645]),
    ("where broadcast", lambda c, x, y: A.where(c, x, y), lambda c, x, y: np.where(c != 0, x, y),
     [(X645[:, :, :1] > 0).astype(np.int8), X345[0], X645]),
    ("masked_fill", lambda x, m: A.masked_fill(x, m, 7), lambda x, m: np.where(m != 0, 7, x).astype(np.float32),
     [X645, (X645 > 0.5).astype(np.int8)]),
    ("clip_by_value", lambda x: A.clip_by_value(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), [X645]),
    ("clamp min only", lambda x: A.clamp(x, min_value=0.1), lambda x: np.maximum(x, np.float32(0.1)), [X645]),
    ("clip int", lambda x: A.clip(x, 1.7, 5), lambda x: np.clip(x, 1, 5), [np.arange(-3, 9, dtype=np.int32)
                                                                           .reshape(6, 2)]),
    ("broadcast_like keepdims", lambda x, y: A.broadcast_like(x, y, broadcast_axes=(1,)),
     lambda x, y: np.broadcast_to(x, y.shape), [X645[:, :1], X645]),
    ("broadcast_like reduced", lambda x, y: A.broadcast_like(x, y, broadcast_axes=[1]),
     lambda x, y: np.broadcast_to(x[:, None], y.shape), [X645[:, 0], X645]),
    ("broadcast_like all axes", lambda x, y: A.broadcast_like(x, y), lambda x, y: np.broadcast_to(x, y.shape),
     [X645[:1, :1, :1], X645]),
    ("broadcast_like all axes reduced", lambda x, y: A.broadcast_like(x, y), lambda x, y: np.full(y.shape, x[0]),
     [X345[0, 0, :1], X345]),
    ("top_k", lambda x: A.top_k(x, k=2), lambda x: np.argsort(-x, -1, kind="stable")[..., :2].astype(np.int32),
     [X645]),
    ("top_k axis 1", lambda x: A.top_k(x, axis=1, k=3),
     lambda x: np.argsort(-x, 1, kind="stable")[:, :3].astype(np.int32), [X645]),
]


@pytest.mark.parametrize("label,fn,ref,arrays", FORWARD, ids=[c[0] for c in FORWARD])
def test_forward_matches_numpy_on_1_2_3_devices(label, fn, ref, arrays):
    want = ref(*arrays)
    for devices in (1, 2, 3):
        got = _run(fn, arrays, devices)
        assert got.shape == want.shape and got.dtype == want.dtype, (devices, got.shape, got.dtype)
        np.testing.assert_array_equal(got, want, err_msg="%s on %d devices" % (label, devices))


# --- composite gradients through the public functions (variable, one SGD step lr 1) -------------------------------
def _grad_job(fn, x0, extras, devices, distribute=None):
    """(f(x0, *extras), d sum(f(x) * r) / dx) with x a float64 variable set by load_variables; r fixed."""
    y_shape = _output_shape(fn, x0, extras)
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    r = np.random.default_rng(5).uniform(0.5, 1.5, y_shape) * np.random.default_rng(6).choice([-1, 1], y_shape)
    params = [tp.Numpy.Placeholder(e.shape, dtype=dtypes.from_numpy(e.dtype)) for e in extras]
    params.append(tp.Numpy.Placeholder(r.shape, dtype=flow.float64, batch_axis=None))

    def body(args):
        *ext, rr = args
        x = flow.get_variable("x", shape=x0.shape, dtype=flow.float64, initializer=flow.zeros_initializer(),
                              distribute=distribute)
        y = fn(x, *ext)
        loss = flow.math.reduce_sum(y * rr)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(loss)
        return (y,)

    job = gc._declare("array_grad_job", body, params, 1, "train")
    flow.load_variables({"x": x0})
    (y,) = job(tuple(extras) + (r,))
    return y, x0 - flow.get_all_variables()["x"].numpy(), r


def _output_shape(fn, x0, extras):
    """Shape of fn's result, from a one-device predict job."""
    return _run(fn, [x0] + list(extras), 1, splits=[None] * (1 + len(extras))).shape


def _central(ref, x0, extras, r, eps=1e-6):
    g = np.zeros(x0.size)
    for e in range(x0.size):
        hi, lo = x0.copy(), x0.copy()
        hi.reshape(-1)[e] += eps
        lo.reshape(-1)[e] -= eps
        g[e] = (np.sum(ref(hi, *extras) * r) - np.sum(ref(lo, *extras) * r)) / (2 * eps)
    return g.reshape(x0.shape)


G = np.random.default_rng(11)
GRAD_PUBLIC = [
    ("stack", lambda x: A.stack([x, 2 * x], axis=1), lambda x: np.stack([x, 2 * x], 1), G.standard_normal((4, 3)),
     [], flow.distribute.split(1)),
    ("legacy slice", lambda x: A.slice(x, [None, -2, 1], [None, 2, -1]), lambda x: x[:, -2:, 1:],
     G.standard_normal((3, 4, 3)), [], flow.distribute.split(0)),
    ("reverse", lambda x: A.reverse(x, 1), lambda x: x[:, ::-1], G.standard_normal((3, 4)), [],
     flow.distribute.split(0)),
    ("broadcast_like reduced", lambda x, y: A.broadcast_like(x, y, [0]), lambda x, y: np.broadcast_to(x, y.shape),
     G.standard_normal(4), [np.zeros((3, 4))], None),
    ("gather of a split table", lambda x, i: A.gather(x, i), lambda x, i: x[i], G.standard_normal((5, 2)),
     [np.array([4, 1, 1, 0, 3, 4], dtype=np.int32)], flow.distribute.split(0)),
    ("flatten", lambda x: A.flatten(x, 1), lambda x: x.reshape(3, 4), G.standard_normal((3, 2, 2)), [],
     flow.distribute.split(0)),
    ("clip_by_value", lambda x: A.clip_by_value(x, -0.3, 0.4), lambda x: np.clip(x, -0.3, 0.4),
     np.array([[-1.0, -0.2, 0.1], [0.5, 0.39, -0.31]]), [], flow.distribute.split(1)),
    ("where", lambda x, c: A.where(c, x, -3 * x), lambda x, c: np.where(c != 0, x, -3 * x),
     G.standard_normal((4, 3)), [np.array([[1, 0, 2], [0, 0, 1], [1, 1, 0], [0, 5, 0]], dtype=np.int32)],
     flow.distribute.split(1)),
]


@pytest.mark.parametrize("label,fn,ref,x0,extras,distribute", GRAD_PUBLIC, ids=[g[0] for g in GRAD_PUBLIC])
def test_public_gradient_through_sgd(label, fn, ref, x0, extras, distribute):
    for devices in (1, 2, 3):
        y, g, r = _grad_job(fn, x0, extras, devices, distribute)
        np.testing.assert_allclose(y, ref(x0, *extras), rtol=1e-12, err_msg="%s on %d devices" % (label, devices))
        np.testing.assert_allclose(g, _central(ref, x0, extras, r), rtol=1e-6, atol=1e-8,
                                   err_msg="%s gradient on %d devices" % (label, devices))


def test_clip_gradient_passes_at_the_bounds():
    # legacy: dx = dy where min <= x <= max, bounds included
    x0 = np.array([[-0.3, 0.4, 0.0], [-0.31, 0.41, 0.4]])
    for devices in (1, 2):
        y, g, r = _grad_job(lambda x: A.clip_by_value(x, -0.3, 0.4), x0, [], devices)
        # g is read back as x0 - (x0 - g): equal to r up to one rounding of x0
        np.testing.assert_allclose(g, r * np.array([[1, 1, 1], [0, 0, 1]]), rtol=1e-14, atol=1e-15)


# --- legacy rules ---------------------------------------------------------------------------------------------
def _trace(fn, *shapes_dtypes):
    """Builds (does not run) a job calling fn on placeholders; returns what fn returned or raises its error."""
    flow.clear_default_session()
    params = [tp.Numpy.Placeholder(s, dtype=d) for s, d in shapes_dtypes]
    seen = {}

    def body(args):
        seen["out"] = fn(*args)
        return (args[0],)

    job = gc._declare("array_trace_job", body, params, 1, "predict")
    job(tuple(np.zeros(s, dtype=d.np) for s, d in shapes_dtypes))
    return seen["out"]


F = flow.float32


def test_concat_of_one_input_is_that_input():
    out = _trace(lambda x: (A.concat([x]), x), ((2, 3), F))
    assert out[0] is out[1]


def test_shapes_and_dtypes_of_results():
    out = _trace(lambda x, i: [A.squeeze(A.slice(x, [None, 0, 0], [None, 1, 1])), A.one_hot(i, 4).dtype,
                               A.top_k(x, k=9).shape, A.top_k(x, k=2).dtype, A.flatten(x, 1, -1).shape,
                               A.gather(x, i, axis=1).shape, A.expand_dims(i, 0).shape],
                 ((3, 4, 5), F), ((2,), flow.int32))
    assert out[0].shape == (3,)
    assert out[1] is flow.float32  # dtype None gives float32
    assert out[2] == (3, 4, 5) and out[3] is flow.int32
    assert out[4] == (3, 20) and out[5] == (3, 2, 5) and out[6] == (1, 2)
    assert _trace(lambda x: A.squeeze(x).shape, ((1, 1), F)) == (1,)  # every axis removed: (1,)


@pytest.mark.parametrize("fn,err", [
    (lambda x: A.slice(x, [0, 0], [None, 2, 2]), ValueError),          # begin too short
    (lambda x: A.slice(x, [None, 4, 0], [None, 1, 1]), ValueError),    # begin out of range
    (lambda x: A.slice(x, [None, 0, 0], [None, 0, 1]), ValueError),    # size 0
    (lambda x: A.slice(x, [None, 0, 0], [None, 5, 1]), ValueError),    # size > dim
    (lambda x: A.slice(x, [None, 0.5, 0], [None, 1, 1]), ValueError),  # not an int
    (lambda x: A.slice_v2(x, [(None, None, 0)]), ValueError),          # step 0
    (lambda x: A.slice_v2(x, [(None, None)]), ValueError),             # not a triple
    (lambda x: A.slice_v2(x, [(None, 6, None)] * 4), ValueError),      # too many entries
    (lambda x: A.transpose(x, [0, 1]), ValueError),
    (lambda x: A.transpose(x), TypeError),
    (lambda x: A.transpose(x, [0, 2, 1], conjugate=True), NotImplementedError),
    (lambda x: A.concat([x, A.transpose(x, [1, 0, 2])], axis=2), ValueError),
    (lambda x: A.concat([x, x], axis=3), ValueError),
    (lambda x: A.squeeze(x, [1]), ValueError),
    (lambda x: A.expand_dims(x, 4), ValueError),
    (lambda x: A.flatten(x, 2, 1), ValueError),
    (lambda x: A.pad(x, [[0, 0], [1, 1]]), ValueError),
    (lambda x: A.pad(x, [[0, 0], [1, 1], [-1, 0]]), ValueError),
    (lambda x: A.where(x, x), ValueError),
    (lambda x: A.clip_by_value(x), ValueError),
    (lambda x: A.broadcast_like(x, x, []), ValueError),
    (lambda x: A.broadcast_like(A.slice(x, [None, None, 0], [None, None, 2]), x, [1]), ValueError),
    (lambda x: A.top_k(x, 3), ValueError),                             # the 2nd argument is the axis (v0.3)
    (lambda x: A.top_k(x, k=0), ValueError),
    (lambda x: A.gather(x, x), TypeError),                             # float indices
    (lambda x: A.one_hot(x, 3), TypeError),
    (lambda x: A.stack([x, A.transpose(x, [1, 0, 2])]), ValueError),
])
def test_legacy_argument_errors(fn, err):
    with pytest.raises(err):
        _trace(fn, ((3, 4, 3), F))


# --- data-dependent legacy behaviour ----------------------------------------------------------------------------
def test_gather_reads_zeros_past_the_end_and_rejects_negative_indices():
    params = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    idx = np.array([3, 4, 0, 9], dtype=np.int32)
    want = np.where((idx < 4)[:, None], params[np.minimum(idx, 3)], 0)
    for devices in (1, 2, 3):
        got = _run(lambda p, i: A.gather(p, i), [params, idx], devices, splits=[None, 0])
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="negative index -1"):
        _run(lambda p, i: A.gather(p, i), [params, np.array([1, -1], np.int32)], 1)


def test_top_k_ties_go_to_the_lower_index_and_k_is_capped():
    x = np.array([[1, 3, 3, 2, 3], [5, 5, 5, 5, 5], [0, -1, 2, -1, 2]], dtype=np.float32)
    np.testing.assert_array_equal(_run(lambda a: A.top_k(a, k=3), [x], 2),
                                  [[1, 2, 4], [0, 1, 2], [2, 4, 0]])
    np.testing.assert_array_equal(_run(lambda a: A.top_k(a, k=9), [x], 1), np.argsort(-x, 1, kind="stable"))


def test_one_hot_index_out_of_range_fails():
    with pytest.raises(ValueError, match="out of range"):
        _run(lambda i: A.one_hot(i, depth=3), [np.array([0, 3], np.int32)], 1)


def test_mirrored_pieces_of_different_sizes():
    """Kernels read sizes from their local arrays: dynamic (ListNumpy) pieces smaller than the placeholder work."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    cfg = flow.function_config()
    cfg.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=cfg)
    def mirrored_job(x: tp.ListNumpy.Placeholder((4, 3)),
                     i: tp.ListNumpy.Placeholder((4,), dtype=flow.int32)) -> tp.ListNumpy:
        s = A.slice(A.transpose(A.transpose(x, [1, 0]), [1, 0]), [None, 1], [None, -1])
        g = A.gather(A.concat([s, x], axis=1), i)
        p = A.pad(A.slice_v2(g, [(None, None, None), (0, 3, None)]), [[0, 1], [0, 0]])
        return A.concat([p, A.pad(A.one_hot(i, 4), [[0, 1], [0, 0]])], axis=1)

    xs = [np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(12, dtype=np.float32).reshape(4, 3) + 100]
    iis = [np.array([1, 0], np.int32), np.array([3, 2, 1, 0], np.int32)]
    for x, i, got in zip(xs, iis, mirrored_job(xs, iis)):
        g = np.concatenate([x[:, 1:], x], 1)[i][:, :3]
        want = np.pad(np.concatenate([g, np.eye(4, dtype=np.float32)[i]], 1), [(0, 1), (0, 0)])
        np.testing.assert_array_equal(got, want)


def test_eager_mode_runs_the_ops():
    flow.enable_eager_execution(True)

    @flow.global_function()
    def eager_job(x: tp.Numpy.Placeholder((4, 3)), i: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> tp.Numpy:
        return A.gather(A.stack([x, -x], 1), i, axis=2)

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(eager_job(x, np.array([2, 0], np.int32)), np.stack([x, -x], 1)[:, :, [2, 0]])
