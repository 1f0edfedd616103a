"""`flow.experimental` and `flow.random` of OneFlow v0.3.4 (oneflow_compat/_api/experimental_api.py,
oneflow_compat/random.py): values against numpy written here on 1 and 2 devices, OneFlow's own unit-test scenarios
(ssp_variable_proxy's ring buffer, interface blob read/write), and the random ops' layout independence.
"""
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import typing as tp
from oneflow_compat.ir.sbp import balanced_ranges

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_legacy_array import _list_job  # noqa: E402
from test_legacy_math import _build_error, surface  # noqa: E402


def _first_occurrence_unique(x):
    seen = []
    for v in x.tolist():
        if v not in seen:
            seen.append(v)
    return seen


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_unique_with_counts(dtype):
    x = np.array([5, 1, 5, 7, 1, 1, 2], dtype)
    uniq = _first_occurrence_unique(x)
    for devices in (1, 2):
        y, idx, count, num = _list_job(lambda v: list(flow.experimental.unique_with_counts(v)), [x], devices)
        assert num.tolist() == [len(uniq)] and idx.dtype == np.int32 and y.dtype == dtype
        np.testing.assert_array_equal(y[:len(uniq)], uniq)
        np.testing.assert_array_equal(idx, [uniq.index(v) for v in x.tolist()])
        np.testing.assert_array_equal(count[:len(uniq)], [x.tolist().count(v) for v in uniq])
    _, idx, _, num = _list_job(lambda v: list(flow.experimental.unique_with_counts(v, out_idx=flow.int64)), [x])
    assert idx.dtype == np.int64 and num.dtype == np.int64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_indexed_slices_reduce_sum_and_square_sum(dtype):
    rng = np.random.default_rng(0)
    indices = np.array([3, 0, 3, 2, 0, 3], np.int32)
    values = rng.standard_normal((6, 2, 2)).astype(dtype)
    uniq = _first_occurrence_unique(indices)
    for devices in (1, 2):
        y_idx, y_val, num = _list_job(lambda i, v: list(flow.experimental.indexed_slices_reduce_sum(i, v)),
                                      [indices, values], devices)
        assert num.dtype == np.int64 and num.tolist() == [3] and y_val.shape == (6, 4)
        np.testing.assert_array_equal(y_idx[:3], uniq)
        want = np.stack([values[indices == u].sum(0).reshape(-1) for u in uniq])
        np.testing.assert_allclose(y_val[:3], want, rtol=1e-6)
        z, _, _ = surface(flow.experimental.square_sum, [values], devices, wrt=[])
        np.testing.assert_allclose(z, [np.sum(values.astype(np.float64) ** 2)], rtol=1e-6)


def test_ssp_variable_proxy_ring_buffer():
    """OneFlow's test_ssp_variable_proxy: value is the variable `buffer_size` calls ago."""
    for mode in ("Wc", "Wm"):
        flow.clear_default_session()
        buffer_size = 4

        @flow.global_function()
        def foo() -> tp.Numpy:
            w = flow.get_variable("w", shape=(10,), dtype=flow.float, initializer=flow.constant_initializer(0))
            ones = flow.constant_like(w, value=1.0, dtype=flow.float)
            ref, value = flow.experimental.ssp_variable_proxy(w, buffer_size=buffer_size)
            flow.assign(ref, (value if mode == "Wc" else ref) + ones)
            return value

        got = [float(foo()[0]) for _ in range(12)]
        if mode == "Wc":  # W_mutable = W_constant + 1
            assert got == [0.0] * 4 + [1.0] * 4 + [2.0] * 4
        else:  # W_mutable = W_mutable + 1
            assert got == [0.0] * 4 + [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]


def test_get_and_set_interface_blob_value():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job() -> tp.Numpy:
        return flow.get_variable("v", shape=(4, 3), dtype=flow.float, initializer=flow.constant_initializer(2.0),
                                 distribute=flow.distribute.split(0))

    job()
    np.testing.assert_array_equal(flow.experimental.get_interface_blob_value("v"), np.full((4, 3), 2.0, np.float32))
    new = np.arange(12, dtype=np.float32).reshape(4, 3)
    flow.experimental.set_interface_blob_value("v", new)
    np.testing.assert_array_equal(job(), new)
    with pytest.raises(KeyError, match="no interface op named 'nope'"):
        flow.experimental.get_interface_blob_value("nope")


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_dynamic_binary_split_and_concat_round_trip(dtype):
    x = np.arange(15, dtype=dtype).reshape(5, 3)

    def body(v):
        chunks = flow.experimental.dynamic_binary_split(v, base_shift=4, out_num=6)
        assert [c.shape for c in chunks] == [(256,), (128,), (64,), (32,), (16,), (16,)]
        return flow.experimental.dynamic_binary_concat([flow.identity(c) for c in chunks], v)

    (got,) = _list_job(body, [x])
    np.testing.assert_array_equal(got, x)
    with pytest.raises(ValueError, match="needs up to .* bytes"):
        _build_error(lambda v: flow.experimental.dynamic_binary_split(v, base_shift=1, out_num=2)[0],
                     [np.ones((5, 3))])()


# --- flow.random ---------------------------------------------------------------------------------------------------
def _random_job(devices, body, x, returns=tp.Numpy):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(v: tp.Numpy.Placeholder(x.shape, dtype=flow.float32)) -> returns:
        return body(v)

    return job


def test_bernoulli_probabilities_and_layout_independence():
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, (40, 50)).astype(np.float32)
    p[:5] = 0.0
    p[5:10] = 1.0
    draws = {}
    for devices in (1, 2, 3):
        job = _random_job(devices, lambda v: flow.random.bernoulli(v, seed=5), p)
        a, b = job(p), job(p)
        assert a.dtype == np.float32 and set(np.unique(a)) <= {0.0, 1.0}
        assert not np.array_equal(a, b), "a new draw every call"
        draws[devices] = (a, b)
        np.testing.assert_array_equal(a[:5], 0.0)
        np.testing.assert_array_equal(a[5:10], 1.0)
    # the same numbers whatever the number of devices
    for devices in (2, 3):
        np.testing.assert_array_equal(draws[devices][0], draws[1][0])
        np.testing.assert_array_equal(draws[devices][1], draws[1][1])
    # the frequency follows p: 2000 draws of 0.3
    job = _random_job(1, lambda v: flow.random.bernoulli(v, dtype=flow.int8), np.full((40, 50), 0.3, np.float32))
    a = job(np.full((40, 50), 0.3, np.float32))
    assert a.dtype == np.int8 and abs(a.mean() - 0.3) < 0.04


def test_bernoulli_module_names_follow_oneflow():
    flow.clear_default_session()

    @flow.global_function()
    def job(v: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        flow.random.bernoulli(v, name="b1")
        return flow.random.bernoulli(v, name="b1")

    with pytest.raises(AssertionError, match="duplicated module_name `b1' in global_function `job'"):
        job(np.ones(3, np.float32))


def test_batch_permutation_and_shuffle():
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    perms = []
    for devices in (1, 2):
        job = _random_job(devices, lambda v: flow.random.generate_random_batch_permutation_indices(
            v, seed=3, name="perm"), x)
        first, second = job(x), job(x)
        assert first.dtype == np.int32 and sorted(first.tolist()) == list(range(8))
        assert sorted(second.tolist()) == list(range(8)) and first.tolist() != second.tolist()
        perms.append((first, second))
        job = _random_job(devices, lambda v: flow.random.shuffle(v, seed=3, name="sh"), x)
        y = job(x)
        assert sorted(y[:, 0].tolist()) == x[:, 0].tolist()
        np.testing.assert_array_equal(y, x[(y[:, 0] // 3).astype(int)])
    np.testing.assert_array_equal(perms[0][0], perms[1][0])
    # OneFlow asserts a name where a seed is given
    with pytest.raises(AssertionError):
        _build_error(lambda v: flow.random.generate_random_batch_permutation_indices(v, seed=3), [x])()


def test_gen_seed():
    seed, has_seed = flow.random.gen_seed()
    assert has_seed and isinstance(seed, int)
    assert flow.random.gen_seed(7) == (7, True)


# --- flow.advanced.distribute_* ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("devices", [1, 2, 3])
def test_distribute_split_concat_add_clone_map(devices):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    shapes = []

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((7, 4))) -> tp.Numpy:
        parts = flow.advanced.distribute_split(x, axis=1)
        shapes.append([tuple(p.shape) for p in parts])
        assert [p.op.placement.parallel_num for p in parts] == [1] * devices
        y = flow.advanced.distribute_concat([p * (i + 1) for i, p in enumerate(parts)], axis=1)
        z = flow.advanced.distribute_add(flow.advanced.distribute_clone(x))
        w = flow.advanced.distribute_map([x, x], lambda a, b: (a + b, a - b), axis=0)
        return flow.concat([y, z, w[0], w[1]], axis=1)

    x = np.arange(28, dtype=np.float32).reshape(7, 4)
    got = job(x)
    widths = [len(range(*r)) for r in balanced_ranges(4, devices)]
    assert shapes[0] == [(7, w) for w in widths]
    factor = np.concatenate([np.full(w, i + 1) for i, w in enumerate(widths)])
    np.testing.assert_array_equal(got[:, :4], x * factor)
    np.testing.assert_array_equal(got[:, 4:8], devices * x)
    np.testing.assert_array_equal(got[:, 8:12], 2 * x)
    np.testing.assert_array_equal(got[:, 12:], 0 * x)
    with pytest.raises(AssertionError, match="distribute_concat: 1 blobs for a placement of"):
        flow.clear_default_session()
        flow.config.cpu_device_num(2)

        @flow.global_function()
        def bad(v: tp.Numpy.Placeholder((2, 2))) -> tp.Numpy:
            return flow.advanced.distribute_concat([v])

        bad(np.ones((2, 2), np.float32))


def test_categorical_ordinal_encoder_numbers_hashes_by_first_appearance():
    flow.clear_default_session()

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((6,), dtype=flow.int64)) -> tp.Numpy:
        return flow.layers.categorical_ordinal_encoder(x, capacity=16)

    got1 = job(np.array([907, 11, 907, 5, 11, 23], np.int64))
    got2 = job(np.array([5, 42, 907, 42, 1, 11], np.int64))
    np.testing.assert_array_equal(got1, [1, 2, 1, 3, 2, 4])
    np.testing.assert_array_equal(got2, [3, 5, 1, 5, 6, 2])  # the table persists across calls
    variables = flow.get_all_variables()
    assert variables["CategoricalOrdinalEncoder-Size"].numpy().tolist() == [6]
    assert variables["CategoricalOrdinalEncoder-Table"].numpy().shape == (32,)
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def two(x: tp.Numpy.Placeholder((6,), dtype=flow.int64)) -> tp.Numpy:
        return flow.layers.categorical_ordinal_encoder(x, capacity=16)

    with pytest.raises(ValueError, match="runs on one device only"):
        two(np.zeros(6, np.int64))


@pytest.mark.parametrize("devices", [1, 2])
def test_distributed_partial_fc_sample(devices):
    classes, dim, num_sample = 12, 3, 8
    rng = np.random.default_rng(2)
    w0 = rng.standard_normal((classes, dim))
    labels = np.array([3, 9, 3, 1, 10], np.int32)
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    seen = {}

    def keep(g: tp.Numpy):
        seen["g"] = g

    @flow.global_function(type="train")
    def job(label: tp.Numpy.Placeholder((5,), dtype=flow.int32, batch_axis=None)) -> tp.Numpy:
        w = flow.get_variable("fc", shape=(classes, dim), dtype=flow.float64, initializer=flow.zeros_initializer(),
                              distribute=flow.distribute.split(0))
        flow.watch_diff(w, keep)
        mapped, sampled, sampled_w = flow.distributed_partial_fc_sample(w, label, num_sample)
        logits = flow.matmul(sampled_w, sampled_w, transpose_b=True)  # uses the sampled rows only
        loss = flow.math.reduce_sum(sampled_w)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        return flow.concat([flow.cast(mapped, flow.float64), flow.cast(sampled, flow.float64),
                            flow.reshape(sampled_w, (-1,)), flow.reshape(logits, (-1,))], axis=0)

    flow.load_variables({"fc": w0})
    out = job(labels)
    mapped, sampled = out[:5].astype(int), out[5:13].astype(int)
    sampled_w = out[13:13 + num_sample * dim].reshape(num_sample, dim)
    per_shard = num_sample // devices
    # every label is sampled, at the position its mapped label names
    np.testing.assert_array_equal(sampled[mapped], labels)
    # each shard samples from its own classes: positives in ascending order first
    for s in range(devices):
        block = sampled[s * per_shard:(s + 1) * per_shard]
        lo, hi = s * classes // devices, (s + 1) * classes // devices
        assert ((block >= lo) & (block < hi)).all() and len(set(block)) == per_shard
        positives = sorted({int(v) for v in labels if lo <= v < hi})
        assert list(block[:len(positives)]) == positives
    np.testing.assert_array_equal(sampled_w, w0[sampled])
    # the gradient of Σ sampled_w reaches exactly the sampled rows
    want = np.zeros_like(w0)
    want[sampled] = 1.0
    np.testing.assert_array_equal(seen["g"], want)
