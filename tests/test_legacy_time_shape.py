"""`flow.unpack / pack / repeat / acc` (OneFlow v0.3.4 `framework/ops.py`): blobs with a time shape, unrolled per
tick when the job is built. OneFlow's own tests (test_unpack_pack.py, test_repeat_acc.py), per-tick values against
numpy, training through acc on 1 and 2 devices, nested time shapes, and the errors."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import typing as tp


def _mirrored():
    cfg = flow.FunctionConfig()
    cfg.default_logical_view(flow.scope.mirrored_view())
    cfg.default_data_type(flow.float)
    return cfg


def test_oneflow_unit_tests_unpack_pack_and_repeat_acc():
    flow.clear_default_session()

    @flow.global_function(function_config=_mirrored())
    def RepeatAccJob(a: tp.Numpy.Placeholder((3, 4))):
        return flow.acc(flow.repeat(a, 3), 3)

    @flow.global_function(function_config=_mirrored())
    def UnpackPackJob(a: tp.Numpy.Placeholder((3, 4))):
        return flow.pack(flow.unpack(a, 3), 3)

    x = np.random.rand(3, 4).astype(np.float32)
    np.testing.assert_array_equal(RepeatAccJob(x).get().numpy(), x * 3)
    np.testing.assert_array_equal(UnpackPackJob(x).get().numpy(), x)


@pytest.mark.parametrize("devices", [1, 2])
def test_ops_run_once_per_tick(devices):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    x = np.arange(24, dtype=np.float32).reshape(6, 4)

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((6, 4))) -> tp.Numpy:
        ticks = flow.unpack(a, 3)  # 3 ticks of 2 rows
        means = flow.math.reduce_mean(ticks, axis=0, keepdims=True)  # one (1, 4) mean per tick
        total = flow.reshape(flow.acc(flow.math.reduce_sum(ticks, axis=0), 3), (1, 4))  # the sum of every row
        return flow.concat([flow.pack(means, 3), total], axis=0)

    got = job(x)
    np.testing.assert_allclose(got[:3], x.reshape(3, 2, 4).mean(1))
    np.testing.assert_allclose(got[3], x.sum(0))


@pytest.mark.parametrize("devices", [1, 2])
def test_training_through_acc_matches_the_whole_batch(devices):
    """Gradient accumulation written with unpack/acc: the loss summed over the ticks gives the gradient of the
    whole batch."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    results = {}
    for ticks in (1, 4):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)

        @flow.global_function(type="train")
        def job(a: tp.Numpy.Placeholder((8, 3))) -> tp.Numpy:
            w = flow.get_variable("w", shape=(3, 2), initializer=flow.constant_initializer(0.5))
            part = flow.unpack(a, ticks) if ticks > 1 else a
            loss = flow.math.reduce_sum(flow.math.square(flow.matmul(part, w)))
            total = flow.acc(loss, ticks) if ticks > 1 else loss
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.01]), momentum=0).minimize(total)
            return total

        loss = job(x)
        results[ticks] = (loss, flow.get_all_variables()["w"].numpy().copy())
    np.testing.assert_allclose(results[4][0], results[1][0], rtol=1e-5)
    np.testing.assert_allclose(results[4][1], results[1][1], rtol=1e-5)


def test_nested_time_shapes_and_errors():
    flow.clear_default_session()
    x = np.arange(8, dtype=np.float32).reshape(8, 1)

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((8, 1))) -> tp.Numpy:
        outer = flow.unpack(a, 2)  # 2 ticks of 4 rows
        inner = flow.unpack(outer, 2)  # each: 2 ticks of 2 rows
        summed = flow.acc(flow.math.reduce_sum(inner, axis=0), 2)  # per outer tick: the sum of its rows
        return flow.pack(summed, 2)

    np.testing.assert_array_equal(job(x), [0 + 1 + 2 + 3, 4 + 5 + 6 + 7])
    flow.clear_default_session()

    @flow.global_function()
    def returns_ticks(a: tp.Numpy.Placeholder((4, 1))) -> tp.Numpy:
        return flow.unpack(a, 2)

    with pytest.raises(TypeError, match="returns a blob with a time shape"):
        returns_ticks(np.ones((4, 1), np.float32))
    flow.clear_default_session()

    @flow.global_function()
    def bad_pack(a: tp.Numpy.Placeholder((4, 1))) -> tp.Numpy:
        return flow.pack(flow.unpack(a, 2), 4)

    with pytest.raises(ValueError, match="the last time axis has 2 ticks, not pack_num 4"):
        bad_pack(np.ones((4, 1), np.float32))
    flow.clear_default_session()

    @flow.global_function()
    def bad_unpack(a: tp.Numpy.Placeholder((5, 1))) -> tp.Numpy:
        return flow.pack(flow.unpack(a, 2), 2)

    with pytest.raises(ValueError, match="5 rows cannot be cut into 2 equal pieces"):
        bad_unpack(np.ones((5, 1), np.float32))
