"""Top-level array functions of OneFlow v0.3.4/v0.4.0 beyond the basic ones (oneflow_compat/_api/
legacy_array_api.py): forward values and gradients against numpy written here, in float32 and float64, on 1 and 2
devices; dynamic blobs (argwhere and friends); variables written by assign / logical_slice_assign; OneFlow's
argument errors.
"""
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import typing as tp
from oneflow_compat.ir import dtypes

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gradcheck as gc  # noqa: E402
from test_legacy_math import _build_error, surface  # noqa: E402

FLOATS = [np.float64, np.float32]


@pytest.mark.parametrize("dtype", FLOATS)
def test_sort_and_argsort(dtype):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 5, (6, 4, 5)).astype(dtype)  # ties: the order among equals is kept (stable)
    for devices in (1, 2):
        for axis in (-1, 1, 0):
            for direction in ("ASCENDING", "DESCENDING"):
                key = -x if direction == "DESCENDING" else x
                z, _, _ = surface(lambda v: flow.argsort(v, axis=axis, direction=direction), [x], devices, wrt=[])
                assert z.dtype == np.int32
                np.testing.assert_array_equal(z, np.argsort(key, axis=axis, kind="stable"))
                z, _, _ = surface(lambda v: flow.sort(v, axis=axis, direction=direction), [x], devices, wrt=[])
                np.testing.assert_array_equal(z, np.take_along_axis(x, np.argsort(key, axis=axis, kind="stable"),
                                                                    axis))
    with pytest.raises(AssertionError):
        flow.sort(None, direction="UP")


def _list_job(fn, arrays, devices=1):
    """fn(*blobs) in a predict job returning tp.ListNumpy (dynamic blobs may be returned): a list with the one
    array of a single blob, or, where fn returns a list of blobs, the list of their arrays."""
    import typing

    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    params = [tp.Numpy.Placeholder(a.shape, dtype=dtypes.from_numpy(a.dtype)) for a in arrays]
    several = []

    def body(args):
        out = fn(*args)
        if isinstance(out, (list, tuple)):
            several.append(len(out))
            return tuple(out)
        return out

    body.__name__ = "list_job"
    body.__annotations__ = {"args": typing.Tuple[tuple(params)], "return": tp.ListNumpy}
    job = flow.global_function()(body)
    try:
        return job(tuple(arrays))
    except TypeError:
        if not several:
            raise
    n = several[-1]
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    body.__annotations__ = {"args": typing.Tuple[tuple(params)], "return": typing.Tuple[(tp.ListNumpy,) * n]}
    return [value[0] for value in flow.global_function()(body)(tuple(arrays))]


def test_argwhere_nonzero_and_where_give_dynamic_blobs():
    x = np.array([[0, 1.5, 0], [2, 0, -1]], np.float32)
    want = np.argwhere(x)
    for devices in (1, 2):
        (got,) = _list_job(lambda v: flow.argwhere(v), [x], devices)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)
        (got,) = _list_job(lambda v: flow.argwhere(v, dtype=flow.int64), [x], devices)
        assert got.dtype == np.int64
        (got,) = _list_job(lambda v: flow.nonzero(v), [x], devices)
        np.testing.assert_array_equal(got, want.T)
        (got,) = _list_job(lambda v: flow.where(v), [x], devices)
        np.testing.assert_array_equal(got, want)
    (got,) = _list_job(lambda v: flow.argwhere(v), [np.zeros((3, 2), np.int8)])
    assert got.shape == (0, 2)
    # gathering with the dynamic indices: gather_nd reads the non-zero entries
    (got,) = _list_job(lambda v: flow.gather_nd(v, flow.argwhere(v)), [x])
    np.testing.assert_array_equal(got, x[x != 0])
    # a dynamic blob is not a tp.Numpy result (OneFlow's message)
    flow.clear_default_session()

    @flow.global_function()
    def job(v: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.argwhere(v)

    with pytest.raises(TypeError, match="only fixed shaped blob compatible to oneflow.typing.Numpy"):
        job(x)


def test_sync_dynamic_resize_cast_to_static_shape_dynamic_reshape_elem_cnt():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    size = np.array([4], np.int32)
    (got,) = _list_job(lambda v, s: flow.sync_dynamic_resize(v, s), [x, size])
    np.testing.assert_array_equal(got, x[:4])
    (got,) = _list_job(lambda v, s: flow.cast_to_static_shape(flow.sync_dynamic_resize(v, s)), [x, size])
    np.testing.assert_array_equal(got, np.concatenate([x[:4], np.zeros((2, 2), np.float32)]))
    (got,) = _list_job(lambda v, s: flow.elem_cnt(flow.sync_dynamic_resize(v, s)), [x, size])
    assert got.tolist() == [8]
    (got,) = _list_job(lambda v, s: flow.dynamic_reshape(flow.sync_dynamic_resize(v, s), [-1, 4]), [x, size])
    np.testing.assert_array_equal(got, x[:4].reshape(-1, 4))
    # a static blob is returned as it is by cast_to_static_shape; dynamic_reshape of a static blob is reshape
    for devices in (1, 2):
        z, (g,), r = surface(lambda v: flow.dynamic_reshape(flow.cast_to_static_shape(v), (6, 1, 2)), [x.astype(
            np.float64)], devices)
        np.testing.assert_array_equal(z, x.reshape(6, 1, 2))
        np.testing.assert_array_equal(g, r.reshape(6, 2))


def test_range():
    for devices in (1, 2):
        z, _, _ = surface(lambda v: flow.range(2, 13, 3, dtype=flow.int64), [np.zeros(1)], devices, wrt=[])
        assert z.dtype == np.int64
        np.testing.assert_array_equal(z, np.arange(2, 13, 3))
        z, _, _ = surface(lambda v: flow.range(5, dtype=flow.float32), [np.zeros(1)], devices, wrt=[])
        np.testing.assert_array_equal(z, np.arange(5, dtype=np.float32))
    for bad, msg in (({"start": 3}, "Please specified data type"), ({"start": 5, "limit": 2, "dtype": flow.int32},
                                                                    "Limit should be larger than start"),
                     ({"start": 0, "limit": 3, "delta": 4, "dtype": flow.int32}, "Delta is ilegal"),
                     ({"start": 0.5, "limit": 3, "dtype": flow.int32}, "`start`'s type should be int")):
        with pytest.raises(AssertionError, match=msg):
            flow.range(**bad)


@pytest.mark.parametrize("dtype", FLOATS)
def test_gather_nd_scatter_nd_and_tensor_scatter(dtype):
    rng = np.random.default_rng(1)
    params = rng.standard_normal((6, 5, 3)).astype(dtype)
    idx = np.array([[1, 2], [5, 0], [1, 2], [3, 4]], np.int32)  # a repeated row
    updates = rng.standard_normal((4, 3)).astype(dtype)
    rows = tuple(idx.T)
    for devices in (1, 2):
        z, (g,), r = surface(lambda p, i: flow.gather_nd(p, i), [params, idx], devices, splits=[0, None])
        np.testing.assert_array_equal(z, params[rows])
        want = np.zeros_like(params)
        np.add.at(want, rows, r)
        np.testing.assert_allclose(g, want, rtol=1e-6)
        z, (g,), r = surface(lambda i, u: flow.scatter_nd(i, u, (6, 5, 3)), [idx, updates], devices,
                             splits=[None, 0])
        want = np.zeros_like(params)
        np.add.at(want, rows, updates)
        np.testing.assert_allclose(z, want, rtol=1e-6)
        np.testing.assert_array_equal(g, r[rows])
        uniq = idx[1:]
        urows = tuple(uniq.T)
        z, (gp, gu), r = surface(lambda p, i, u: flow.tensor_scatter_nd_update(p, i, u), [params, uniq, updates[1:]],
                                 devices, splits=[0, None, None], wrt=[0, 2])
        want = params.copy()
        want[urows] = updates[1:]
        np.testing.assert_array_equal(z, want)
        keep = np.ones_like(params)
        keep[urows] = 0
        np.testing.assert_array_equal(gp, r * keep)
        np.testing.assert_array_equal(gu, r[urows])
        z, (gp, gu), r = surface(lambda p, i, u: flow.tensor_scatter_nd_add(p, i, u), [params, idx, updates],
                                 devices, splits=[0, None, None], wrt=[0, 2])
        want = params.copy()
        np.add.at(want, rows, updates)
        np.testing.assert_allclose(z, want, rtol=1e-6)
        np.testing.assert_array_equal(gp, r)
        np.testing.assert_array_equal(gu, r[rows])
    # tensor_scatter_nd_update with a repeated row: OneFlow zeroes the slice, then adds every update to it
    z, _, _ = surface(lambda p, i, u: flow.tensor_scatter_nd_update(p, i, u), [params, idx, updates], 1, wrt=[])
    want = params.copy()
    want[rows] = 0
    np.add.at(want, rows, updates)
    np.testing.assert_allclose(z, want, rtol=1e-6)


def test_nd_index_errors():
    with pytest.raises(IndexError, match=r"gather_nd: index \(6, 0\) out of range for the leading dims \(6, 5\)"):
        _build_error(flow.gather_nd, [np.ones((6, 5)), np.array([[6, 0]], np.int32)])()
    with pytest.raises(ValueError, match="scatter_nd .*updates of shape"):
        _build_error(lambda i, u: flow.scatter_nd(i, u, (6, 5)), [np.array([[1]], np.int32), np.ones((1, 4))])()
    with pytest.raises(TypeError, match="gather_nd .*indices must be an integer blob"):
        _build_error(flow.gather_nd, [np.ones((6, 5)), np.ones((2, 1))])()


@pytest.mark.parametrize("dtype", FLOATS)
def test_dim_gather(dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 6, 3)).astype(dtype)
    index = rng.integers(0, 6, (4, 5, 3)).astype(np.int32)
    for devices in (1, 2):
        z, (g,), r = surface(lambda v, i: flow.dim_gather(v, 1, i), [x, index], devices)
        np.testing.assert_array_equal(z, np.take_along_axis(x, index, 1))
        want = np.zeros_like(x)
        for a in range(4):
            for b in range(5):
                for c in range(3):
                    want[a, index[a, b, c], c] += r[a, b, c]
        np.testing.assert_allclose(g, want, rtol=1e-6)
    with pytest.raises(ValueError, match="Dimensions of input and index should equal"):
        flow.dim_gather(_Shaped((2, 3)), 0, _Shaped((2,)))
    with pytest.raises(ValueError, match="should be same except at dim"):
        flow.dim_gather(_Shaped((2, 3)), 0, _Shaped((2, 4)))


class _Shaped:
    def __init__(self, shape):
        self.shape = shape


@pytest.mark.parametrize("dtype", FLOATS)
def test_slice_update_and_logical_slice(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 7)).astype(dtype)
    u = rng.standard_normal((6, 3)).astype(dtype)
    for devices in (1, 2):
        z, (gx, gu), r = surface(lambda a, b: flow.slice_update(a, b, [(None, None, None), (1, 6, 2)]), [x, u],
                                 devices)
        want = x.copy()
        want[:, 1:6:2] = u
        np.testing.assert_array_equal(z, want)
        mask = np.ones_like(x)
        mask[:, 1:6:2] = 0
        np.testing.assert_array_equal(gx, r * mask)
        np.testing.assert_array_equal(gu, r[:, 1:6:2])
        z, (g,), r = surface(lambda a: flow.experimental.logical_slice(a, [(1, 5, 2), (-4, None, 1)]), [x],
                             devices)
        np.testing.assert_array_equal(z, x[1:5:2, -4:])
        want = np.zeros_like(x)
        want[1:5:2, -4:] = r
        np.testing.assert_array_equal(g, want)
    with pytest.raises(ValueError, match="step must be greater than 0"):
        _build_error(lambda v: flow.experimental.logical_slice(v, [(None, None, -1)]), [np.ones((6, 7))])()


def _variable_job(devices, distribute, body, shape=(6, 4)):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(value: tp.Numpy.Placeholder(shape, dtype=flow.float32, batch_axis=None)) -> tp.Numpy:
        v = flow.get_variable("v", shape=shape, dtype=flow.float32, initializer=flow.zeros_initializer(),
                              distribute=distribute)
        body(v, value)
        return flow.identity(v)

    return job


@pytest.mark.parametrize("devices,distribute", [(1, None), (2, "split0"), (3, "split1"), (2, "broadcast")])
def test_assign_and_logical_slice_assign_write_the_variable(devices, distribute):
    dist = {None: None, "split0": flow.distribute.split(0), "split1": flow.distribute.split(1),
            "broadcast": flow.distribute.broadcast()}[distribute]
    value = np.arange(24, dtype=np.float32).reshape(6, 4)
    job = _variable_job(devices, dist, lambda v, val: flow.assign(v, val))
    job(value)
    np.testing.assert_array_equal(flow.get_all_variables()["v"].numpy(), value)
    job = _variable_job(devices, dist, lambda v, val: flow.system.assign(v, val))
    job(-value)
    np.testing.assert_array_equal(flow.get_all_variables()["v"].numpy(), -value)
    # logical_slice_assign: the slice rows 1:5:2, columns 1: of the variable take the value's corresponding entries
    job = _variable_job(devices, dist, lambda v, val: flow.experimental.logical_slice_assign(
        v, flow.slice_v2(val, [(0, 2, 1), (0, 3, 1)]), [(1, 5, 2), (1, None, None)]))
    job(value)
    want = np.zeros((6, 4), np.float32)
    want[1:5:2, 1:] = value[:2, :3]
    np.testing.assert_array_equal(flow.get_all_variables()["v"].numpy(), want)


def test_assign_needs_a_variable():
    with pytest.raises(TypeError, match="assign .*ref must be a variable"):
        _build_error(lambda a, b: flow.assign(a, b) or a, [np.ones((2, 2)), np.ones((2, 2))])()


@pytest.mark.parametrize("dtype", FLOATS)
def test_identity_n_amp_white_identity_counts_expand_diag(dtype):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 3)).astype(dtype)
    b = rng.standard_normal((6, 2)).astype(dtype)
    for devices in (1, 2):
        z, (g,), r = surface(lambda x, y: flow.identity_n([x, y])[1], [a, b], devices, wrt=[1])
        np.testing.assert_array_equal(z, b)
        np.testing.assert_array_equal(g, r)
        z, (g,), r = surface(flow.amp_white_identity, [a], devices)
        np.testing.assert_array_equal(z, a)
        np.testing.assert_array_equal(g, r)
        bad = a.copy()
        bad[0, 0], bad[3, 1], b2 = np.inf, np.nan, b.copy()
        b2[5, 1] = -np.inf
        z, _, _ = surface(flow.count_not_finite, [bad], devices, wrt=[])
        assert z.dtype == np.int64 and z.tolist() == [2]
        z, _, _ = surface(lambda x, y: flow.multi_count_not_finite([x, y]), [bad, b2], devices, wrt=[])
        assert z.tolist() == [3]
        z, (g,), r = surface(lambda x: flow.expand(x, [2, -1, 3]), [a[:, :1].copy()], devices)
        np.testing.assert_array_equal(z, np.broadcast_to(a[:, :1], (2, 6, 3)))
        np.testing.assert_allclose(g, r.sum(axis=(0, 2))[:, None], rtol=1e-6)
        z, (g,), r = surface(lambda x: flow.diag(x, 1), [a[:, 0].copy()], devices)
        np.testing.assert_array_equal(z, np.diag(a[:, 0], 1))
        np.testing.assert_array_equal(g, np.diag(r, 1))
        z, (g,), r = surface(lambda x: flow.diag(x, -1), [a], devices)
        np.testing.assert_array_equal(z, np.diag(a, -1))
        want = np.zeros_like(a)
        want[np.arange(1, 4), np.arange(3)] = r
        np.testing.assert_array_equal(g, want)
