"""The semantic differences of issue 20 fixed to OneFlow's behaviour (the math ones — integer divide,
reciprocal_no_nan at 0, the gradient through a cast to an integer type — are in test_legacy_math.py):

* a train job returning a variable in the mirrored view returns the value the step read, not the updated one;
* indexed-slices SGDW / AdamW (`func_config.indexed_slices_optimizer_conf`) update only the gathered rows: the
  others keep their value (no weight decay) and their optimizer state — OneFlow v0.3.4's own test scenarios
  (test_optimizers.py: compare_with_numpy_indexed_slices_sgdw / _adamw) with its numpy references;
* `flow.losses.add_loss` outside a job function, as OneFlow v0.3.4 behaves.
"""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import typing as tp


@pytest.mark.parametrize("devices", [1, 2])
def test_mirrored_train_job_returns_the_variable_as_the_step_read_it(devices):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    cfg = flow.FunctionConfig()
    cfg.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(type="train", function_config=cfg)
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
        w = flow.get_variable("w", shape=(3,), initializer=flow.constant_initializer(1.0))
        loss = flow.math.reduce_sum(x * w)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return w

    feed = [np.ones((2, 3), np.float32)] * devices
    first = job(feed)
    assert len(first) == devices
    for piece in first:
        np.testing.assert_array_equal(piece, [1.0, 1.0, 1.0])  # the value before this call's update
    after = flow.get_all_variables()["w"].numpy().copy()
    assert not np.array_equal(after, [1.0, 1.0, 1.0])
    for piece in job(feed):
        np.testing.assert_array_equal(piece, after)


def _unique_grads(ids, gradient):
    out = {}
    for i, row in zip(ids.reshape(-1), gradient.reshape(len(ids.reshape(-1)), -1)):
        out[int(i)] = out.get(int(i), 0) + row
    return out


def _indexed_slices_job(optimizer, model_shape, ids_shape, mul_scalar, devices=1, indexed=True):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    cfg = flow.FunctionConfig()
    cfg.default_data_type(flow.float32)
    if indexed:
        cfg.indexed_slices_optimizer_conf(dict(include_op_names=dict(op_name=["embeddings"])))

    @flow.global_function(type="train", function_config=cfg)
    def job(sparse_ids: tp.Numpy.Placeholder(ids_shape, dtype=flow.int32)) -> tp.Numpy:
        table = flow.get_variable(name="embeddings", shape=model_shape,
                                  initializer=flow.random_uniform_initializer(minval=0, maxval=100))
        embedding = flow.gather(params=table * mul_scalar, indices=sparse_ids)
        loss = flow.math.reduce_mean(embedding)
        optimizer.minimize(loss)
        return table

    return job


@pytest.mark.parametrize("devices", [1, 2])
def test_indexed_slices_sgdw_updates_only_the_gathered_rows(devices):
    model_shape, ids_shape, mul_scalar, lr, beta, wd, iters = (20, 5), (3, 4), 2.0, 0.1, 0.9, 0.5, 3
    sgdw = flow.optimizer.SGDW(flow.optimizer.PiecewiseConstantScheduler([], [lr]), momentum=beta,
                               weight_decay=wd)
    job = _indexed_slices_job(sgdw, model_shape, ids_shape, mul_scalar, devices)
    ids = np.random.default_rng(0).integers(0, 10, ids_shape).astype(np.int32)  # rows 10.. never gathered
    values = [job(ids) for _ in range(iters + 1)]
    # OneFlow's numpy reference (test_optimizers.py, indexed_slices_update_numpy)
    param, momentum = values[0].astype(np.float64), np.zeros(model_shape)
    unique = _unique_grads(ids, np.full(ids_shape + (model_shape[1],), mul_scalar / np.prod(
        ids_shape + (model_shape[1],))))
    for _ in range(iters):
        new_param, new_momentum = param.copy(), momentum.copy()
        for i, g in unique.items():
            new_momentum[i] = beta * momentum[i] - lr * g
            new_param[i] = param[i] + new_momentum[i] - lr * wd * param[i]
        param, momentum = new_param, new_momentum
    np.testing.assert_allclose(values[-1], param, rtol=1e-4, atol=1e-4)
    untouched = sorted(set(range(model_shape[0])) - set(unique))
    np.testing.assert_array_equal(values[-1][untouched], values[0][untouched])
    # without the conf the gradient is dense and SGDW decays every row (OneFlow does the same)
    job = _indexed_slices_job(flow.optimizer.SGDW(flow.optimizer.PiecewiseConstantScheduler([], [lr]),
                                                  momentum=beta, weight_decay=wd),
                              model_shape, ids_shape, mul_scalar, devices, indexed=False)
    first, second = job(ids), job(ids)
    np.testing.assert_allclose(second[untouched], first[untouched] * (1 - lr * wd), rtol=1e-5)


def test_indexed_slices_adamw_updates_only_the_gathered_rows():
    model_shape, ids_shape, mul_scalar, lr, b1, b2, eps, wd, iters = (20, 5), (3, 4), 2.0, 0.01, 0.9, 0.99, 1e-7, \
        0.5, 3
    adamw = flow.optimizer.AdamW(flow.optimizer.PiecewiseConstantScheduler([], [lr]), beta1=b1, beta2=b2,
                                 epsilon=eps, do_bias_correction=True, weight_decay=wd)
    job = _indexed_slices_job(adamw, model_shape, ids_shape, mul_scalar)
    ids = np.random.default_rng(1).integers(0, 10, ids_shape).astype(np.int32)
    values = [job(ids) for _ in range(iters + 1)]
    param, m, v = values[0].astype(np.float64), np.zeros(model_shape), np.zeros(model_shape)
    unique = _unique_grads(ids, np.full(ids_shape + (model_shape[1],), mul_scalar / np.prod(
        ids_shape + (model_shape[1],))))
    for it in range(iters):
        new_param, new_m, new_v = param.copy(), m.copy(), v.copy()
        lr_t = lr * np.sqrt(1 - b2 ** (it + 1)) / (1 - b1 ** (it + 1))
        for i, g in unique.items():
            new_m[i] = b1 * m[i] + (1 - b1) * g
            new_v[i] = b2 * v[i] + (1 - b2) * g * g
            new_param[i] = param[i] - lr_t * (new_m[i] / (np.sqrt(new_v[i]) + eps) + wd * param[i])
        param, m, v = new_param, new_m, new_v
    np.testing.assert_allclose(values[-1], param, rtol=1e-4, atol=1e-4)
    untouched = sorted(set(range(model_shape[0])) - set(unique))
    np.testing.assert_array_equal(values[-1][untouched], values[0][untouched])
    states = flow.get_all_variables()
    np.testing.assert_array_equal(states["embeddings-m"].numpy()[untouched], 0)


def test_add_loss_outside_a_train_job_function():
    """OneFlow v0.3.4 (ops/losses/add_loss.py) guards add_loss with hob.in_global_mode & hob.is_trainable through
    enable_if.unique: outside a job function, or in a predict job, no implementation matches and the call raises
    NotImplementedError("no avaliable function found. ...") with both candidates FAILED."""
    with pytest.raises(NotImplementedError, match="no avaliable function found") as e:
        flow.losses.add_loss(None)
    assert "lazy_add_loss: FAILED" in str(e.value) and "eager_add_loss: FAILED" in str(e.value)
    assert "in_global_mode: False" in str(e.value)
    flow.clear_default_session()

    @flow.global_function()
    def predict(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        flow.losses.add_loss(x)
        return x

    with pytest.raises(NotImplementedError, match="is_trainable: False"):
        predict(np.ones(2, np.float32))
