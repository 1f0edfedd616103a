import math

import numpy as np
import pytest

from oneflow_compat import initializer as init
from oneflow_compat.ir import dtypes
from oneflow_compat.ops import initial_values

TRUNCATED_STD_RATIO = 0.87962566103423978  # std of N(0,1) truncated at ±2


def _f32(x):
    return float(np.float32(x))


def _reference_truncated_normal(rng, mean, std, n):
    # Same RNG stream contract as OneFlow (batches of int(missing·1.2) draws), written as accumulate-then-concat.
    kept_batches, have = [], 0
    while have < n:
        batch = rng.normal(mean, std, size=int((n - have) * 1.2))
        batch = batch[np.abs(batch - mean) < 2 * std]
        batch = batch[: n - have]
        kept_batches.append(batch)
        have += len(batch)
    return np.concatenate(kept_batches) if kept_batches else np.empty(0)


def test_generation_is_a_pure_function_of_conf_shape_dtype_seed():
    conf = init.truncated_normal(0.1)
    a = init.generate(conf, (30, 20), np.float32, seed=7)
    b = init.generate(conf, (30, 20), np.float32, seed=7)
    c = init.generate(conf, (30, 20), np.float32, seed=8)
    assert a.dtype == np.float32 and a.shape == (30, 20)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_uniform_matches_numpy_stream_with_float32_bounds():
    conf = init.random_uniform_initializer(-1 / 28, 1 / 28)
    assert conf.kind == "random_uniform" and conf.min == _f32(-1 / 28) and conf.max == _f32(1 / 28)
    got = init.generate(conf, (50, 28), np.float32, seed=123)
    rng = np.random.default_rng(123)
    expected = rng.uniform(_f32(-1 / 28), np.nextafter(_f32(1 / 28), np.inf), size=50 * 28)
    np.testing.assert_array_equal(got, expected.astype(np.float32).reshape(50, 28))


def test_normal_and_truncated_normal_match_reference_streams():
    got = init.generate(init.random_normal_initializer(1.0, 0.3), (100,), np.float64, seed=5)
    np.testing.assert_array_equal(got, np.random.default_rng(5).normal(1.0, _f32(0.3), size=100))

    got = init.generate(init.truncated_normal_initializer(0.5, 2.0), (40, 25), np.float32, seed=9)
    expected = _reference_truncated_normal(np.random.default_rng(9), 0.5, 2.0, 1000)
    np.testing.assert_array_equal(got, expected.astype(np.float32).reshape(40, 25))


def test_truncated_normal_statistics():
    values = init.generate(init.truncated_normal(0.1), (400, 500), np.float64, seed=0)
    std = _f32(0.1)
    assert np.abs(values).max() < 2 * std
    assert abs(values.mean()) < 1e-3
    assert values.std() == pytest.approx(std * TRUNCATED_STD_RATIO, rel=0.01)
    # Truncation, not clipping: the band 1.9σ..2σ holds its normal share, with no pile-up at the bounds.
    phi = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    band_share = (phi(2) - phi(1.9)) / (phi(2) - 0.5)
    assert np.mean(np.abs(values) > 1.9 * std) == pytest.approx(band_share, abs=0.001)


def test_variance_scaling_truncated_normal_has_the_requested_std():
    values = init.generate(init.variance_scaling_initializer(2.0, "fan_in"), (300, 400), np.float32, seed=1)
    assert values.std() == pytest.approx(math.sqrt(2.0 / 400), rel=0.01)
    assert np.abs(values).max() < 2 * math.sqrt(2.0 / 400) / TRUNCATED_STD_RATIO


def test_variance_scaling_fan_quirk_for_conv_weights():
    shape = (8, 4, 3, 5)  # (filters, in channels, kh, kw)
    # fan_out = shape[0]·prod(shape[1:-1]) = 8·4·3 = 96 whatever the data_format (OneFlow's quirk), not 8·3·5.
    for data_format in ("NCHW", "NHWC", ""):
        conf = init.variance_scaling_initializer(1.0, "fan_out", "random_uniform", data_format)
        values = init.generate(conf, shape, np.float64, seed=3)
        limit = math.sqrt(3.0 / 96)
        assert np.abs(values).max() <= limit
        assert np.abs(values).max() > 0.98 * limit
    expected = np.random.default_rng(4).normal(0, math.sqrt(1.0 / 60), size=480).reshape(shape)  # fan_in 4·3·5
    got = init.generate(init.variance_scaling_initializer(1.0, "fan_in", "random_normal"), shape, np.float64, seed=4)
    np.testing.assert_array_equal(got, expected)


def test_glorot_uniform_on_a_dense_weight():
    conf = init.glorot_uniform_initializer()
    assert conf == init.xavier_uniform_initializer() == init.variance_scaling_initializer(
        1.0, "fan_avg", "random_uniform", "")
    values = init.generate(conf, (300, 200), np.float64, seed=2)  # (out, in)
    limit = math.sqrt(6.0 / (300 + 200))
    expected = np.random.default_rng(2).uniform(-limit, limit, size=60000).reshape(300, 200)
    np.testing.assert_array_equal(values, expected)
    normal = init.generate(init.glorot_normal_initializer(), (300, 200), np.float64, seed=2)
    assert normal.std() == pytest.approx(math.sqrt(2.0 / 500), rel=0.02)


def test_kaiming_initializer():
    conf = init.kaiming_initializer((64, 32, 3, 3), nonlinearity="relu")
    assert conf.kind == "random_normal"
    assert conf.mean == 0.0 and conf.std == _f32(math.sqrt(2.0) / math.sqrt(32 * 9))
    conf = init.kaiming_initializer((10, 20), distribution="random_uniform", mode="fan_out", nonlinearity="tanh")
    bound = math.sqrt(3.0) * (5.0 / 3) / math.sqrt(10)
    assert (conf.kind, conf.min, conf.max) == ("random_uniform", _f32(-bound), _f32(bound))
    conf = init.kaiming_initializer((6, 4, 2, 2), mode="fan_avg", data_format="NHWC", negative_slope=0.5)
    fan = (4 * 2 * 2 + 6 * 4 * 2) / 2  # NHWC: fan_out = 6·shape[1:-1]
    assert conf.std == _f32(math.sqrt(2.0 / 1.25) / math.sqrt(fan))
    with pytest.raises(AssertionError):
        init.kaiming_initializer([10, 20])
    with pytest.raises(AssertionError):
        init.kaiming_initializer((10,))


def test_constant_initializers_and_dtypes():
    assert init.generate(init.constant_initializer(2.5), (2, 2), np.float32, 0).tolist() == [[2.5, 2.5], [2.5, 2.5]]
    zeros, ones = init.zeros_initializer(), init.ones_initializer(dtypes.float64)
    assert zeros.kind == ones.kind == "constant" and (zeros.value, ones.value) == (0.0, 1.0)
    # Protobuf `float` storage: a float64 variable gets the float32-rounded constant.
    assert init.generate(init.constant_initializer(0.1, dtypes.double), (1,), np.float64, 0)[0] == _f32(0.1)
    int_conf = init.constant_initializer(7.9, dtypes.int32)
    assert int_conf.kind == "constant_int" and int_conf.value == 7
    assert init.generate(int_conf, (3,), np.int64, 0).tolist() == [7, 7, 7]
    for bad in (dtypes.float16, dtypes.uint8, dtypes.char):
        with pytest.raises(NotImplementedError, match="Do not support such data type"):
            init.constant_initializer(1, bad)


def test_integer_uniform_and_float_uniform_into_integer_variables():
    conf = init.random_uniform_initializer(0, 10, dtype=dtypes.int32)
    assert conf.kind == "random_uniform_int"
    got = init.generate(conf, (1000,), np.int32, seed=11)
    # OneFlow's RngIntUniform (core/kernel/kernel_util.cpp, v0.4.0) includes maxval: [0, 10]
    np.testing.assert_array_equal(got, np.random.default_rng(11).integers(0, 11, size=1000).astype(np.int32))
    assert got.min() == 0 and got.max() == 10
    labels = init.generate(init.random_uniform_initializer(dtype=dtypes.int32), (1000,), np.int32, seed=3)
    assert set(labels.tolist()) == {0, 1}  # the defaults (0, 1): Wide&Deep's synthetic click labels
    # A float conf on an int variable draws floats and truncates them, as OneFlow's astype did.
    got = init.generate(init.random_uniform_initializer(0, 3), (500,), np.int64, seed=12)
    expected = np.random.default_rng(12).uniform(0.0, np.nextafter(3.0, np.inf), size=500).astype(np.int64)
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(AssertionError):
        init.random_uniform_initializer(1, 0)


def test_random_normal_rejects_seed_and_dtype():
    with pytest.raises(AssertionError):
        init.random_normal_initializer(seed=1)
    with pytest.raises(AssertionError):
        init.random_normal_initializer(dtype=dtypes.float32)


def test_empty_scalar_and_zero_size_shapes():
    assert init.generate(init.empty_initializer(), (2, 3), np.float32, 0).tolist() == [[0.0] * 3] * 2
    scalar = init.generate(init.random_normal_initializer(), (), np.float64, seed=4)
    assert scalar.shape == () and scalar == np.random.default_rng(4).normal(0.0, 1.0, size=1)[0]
    assert init.generate(init.glorot_uniform_initializer(), (0, 5), np.float32, 0).shape == (0, 5)


def test_slices_follow_oneflows_32mib_rule():
    mib32 = 32 * 1024 * 1024
    assert initial_values._slice_lengths((512, 3136), 4) == [512 * 3136]
    assert initial_values._slice_lengths((10000, 1000), 4) == [8388 * 1000, 1612 * 1000]
    assert initial_values._slice_lengths((2, 9000000), 4) == [mib32 // 4, 9000000 - mib32 // 4] * 2
    assert initial_values._slice_lengths((), 4) == [1]
    assert initial_values._slice_lengths((3, 0), 4) == []


def test_truncated_normal_above_32mib_is_drawn_per_slice():
    shape = (2, 2100000)  # float64: 33.6 MB -> two slices of one row each
    got = init.generate(init.truncated_normal(1.0), shape, np.float64, seed=21)
    rng = np.random.default_rng(21)
    rows = [_reference_truncated_normal(rng, 0.0, 1.0, 2100000) for _ in range(2)]
    np.testing.assert_array_equal(got, np.stack(rows))
    whole = _reference_truncated_normal(np.random.default_rng(21), 0.0, 1.0, 4200000)
    assert not np.array_equal(got.reshape(-1), whole)  # slicing really changes the stream


def test_conf_objects():
    conf = init.initializer_conf_from_dict({"random_uniform_conf": {"min": -0.5, "max": 0.5}})
    assert conf == init.random_uniform_initializer(-0.5, 0.5)
    assert repr(conf) == "InitializerConf(random_uniform: min=-0.5, max=0.5)"
    assert hash(conf) == hash(init.random_uniform_initializer(-0.5, 0.5))
    assert init.initializer_conf_from_dict({"constant_conf": {}}) == init.zeros_initializer()
    vs = init.initializer_conf_from_dict({"variance_scaling_conf": {"scale": 2.0, "variance_norm": "kAverage",
                                                                    "distribution": "kRandomNormal"}})
    assert vs == init.variance_scaling_initializer(2.0, "fan_avg", "random_normal")
    with pytest.raises(ValueError, match="unknown initializer conf"):
        init.initializer_conf_from_dict({"nope_conf": {}})
    with pytest.raises(ValueError, match="Invalid variance_norm"):
        init.variance_scaling_initializer(mode="fan_sideways")
    with pytest.raises(AssertionError):
        init.variance_scaling_initializer(data_format="HWCN")
