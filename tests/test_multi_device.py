"""Parallelism never changes the numbers: the same conv -> dense -> dense job on 1..4 in-process devices (data,
model, pipeline, mirrored, gradient accumulation, uneven batches) gives the same losses and weights as on one
device."""
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_scripts"))
from hybrid_model import IN, batch as make_batch, initial_weights, loss as hybrid_loss  # noqa: E402


def _train(devices, batch, variant, steps=3, momentum=0.9, accumulate=1):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    cfg = flow.function_config()
    if variant == "mirrored":
        cfg.default_logical_view(flow.scope.mirrored_view())
    if accumulate > 1:
        cfg.train.num_gradient_accumulation_steps(accumulate)
    last = "0:%d" % (devices - 1)

    def model(x, y):
        return hybrid_loss(x, y, variant, last)

    sgd = flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.2]), momentum=momentum)
    if variant == "mirrored":
        per = -(-batch // devices)  # the largest piece

        @flow.global_function(type="train", function_config=cfg)
        def train(x: tp.ListNumpy.Placeholder((per, IN)),
                  y: tp.ListNumpy.Placeholder((per,), dtype=flow.int32)) -> tp.ListNumpy:
            loss = model(x, y)
            sgd.minimize(loss)
            return loss
    else:
        @flow.global_function(type="train", function_config=cfg)
        def train(x: tp.Numpy.Placeholder((batch, IN)),
                  y: tp.Numpy.Placeholder((batch,), dtype=flow.int32)) -> tp.Numpy:
            loss = model(x, y)
            sgd.minimize(loss)
            return loss

    flow.load_variables(initial_weights())
    losses = []
    for s in range(steps):
        x, y = make_batch(s, batch)
        if variant == "mirrored":
            xs = np.array_split(x, devices)
            ys = np.array_split(y, devices)
            out = train(list(xs), list(ys))
            losses.append(np.concatenate(out))
        else:
            losses.append(train(x, y))
    weights = {k: v.numpy() for k, v in flow.get_all_variables().items()}
    return np.array(losses), weights


def _assert_same(ref, got):
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-4, atol=1e-6)
    for name, w in ref[1].items():
        np.testing.assert_allclose(got[1][name], w, rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("variant", ["data", "model", "pipeline"])
@pytest.mark.parametrize("devices", [2, 3, 4])
@pytest.mark.parametrize("batch", [12, 10])
def test_consistent_variants_equal_one_device(variant, devices, batch):
    ref = _train(1, batch, "data")
    _assert_same(ref, _train(devices, batch, variant))


@pytest.mark.parametrize("devices", [2, 3, 4])
def test_mirrored_equals_consistent(devices):
    ref = _train(1, 12, "data")
    _assert_same(ref, _train(devices, 12, "mirrored"))


def test_mirrored_uneven_pieces_use_global_loss_count():
    ref = _train(1, 10, "data")
    _assert_same(ref, _train(3, 10, "mirrored"))  # pieces of 4, 3, 3 rows


@pytest.mark.parametrize("devices", [1, 2])
def test_gradient_accumulation_equals_full_batch(devices):
    ref = _train(1, 12, "data", momentum=0.0)
    _assert_same(ref, _train(devices, 12, "data", momentum=0.0, accumulate=3))


def _implicit_job(mode):
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    cfg = flow.function_config()
    cfg.implicit_boxing(mode)

    @flow.global_function(function_config=cfg)
    def f(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        # the reduction over the split batch axis leaves partial sums that the softmax must all-reduce
        return flow.nn.softmax(flow.math.reduce_sum(x, axis=0, keepdims=True))

    return f


def test_implicit_boxing_can_warn_or_fail():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    expected = np.exp(x.sum(0)) / np.exp(x.sum(0)).sum()
    np.testing.assert_allclose(_implicit_job("silent")(x)[0], expected, rtol=1e-5)
    with pytest.warns(UserWarning, match="implicit boxing P -> "):
        np.testing.assert_allclose(_implicit_job("warn")(x)[0], expected, rtol=1e-5)
    from oneflow_compat.passes.boxing import ImplicitBoxingError

    with pytest.raises(ImplicitBoxingError, match=r"reduce_sum_\d+/out for op .softmax_\d+."):
        _implicit_job("error")(x)
    with pytest.raises(ValueError, match="implicit_boxing must be"):
        flow.function_config().implicit_boxing("loud")
