"""Gradient post-processing through whole train jobs (legacy-api.md §2.12-2.13): loss scaling (static and
dynamic), regularizers, clipping, combined optimizers, LR schedules — checked against hand-computed updates."""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp

X = np.array([1.0, -2.0, 3.0, 0.5], np.float32)


def _job(opt_factory, regularizer=None, name="t"):
    def t(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        v = flow.get_variable("v", shape=(4,), initializer=flow.constant_initializer(1.0), regularizer=regularizer)
        loss = v * x  # d(mean loss)/dv = x / 4
        opt_factory().minimize(loss)
        return loss

    t.__name__ = name
    return flow.global_function(type="train")(t)


def _v():
    return flow.get_all_variables()["v"].numpy()


def _const(lr):
    return flow.optimizer.PiecewiseConstantScheduler([], [lr])


def test_static_loss_scale_gives_the_unscaled_update():
    t = _job(lambda: flow.optimizer.SGD(_const(0.1), momentum=0, loss_scale_factor=1024.0))
    t(X)
    np.testing.assert_allclose(_v(), 1 - 0.1 * X / 4, rtol=1e-6)


def test_dynamic_loss_scale_skips_overflowing_steps_and_moves_the_scale():
    policy = flow.optimizer.loss_scale.dynamic_loss_scale(initial_loss_scale=2 ** 10, increment_period=2)
    t = _job(lambda: flow.optimizer.SGD(_const(0.1), momentum=0, loss_scale_policy=policy))
    expected = np.ones(4, np.float32)
    scales = []
    for x in (X, np.array([1, np.inf, 1, 1], np.float32), X, X):
        t(x)
        if np.isfinite(x).all():
            expected = expected - 0.1 * x / 4
        scales.append(float(flow.get_all_variables()["System-Train-DynamicLossScale-t-LossScale"].numpy()[0]))
        np.testing.assert_allclose(_v(), expected, rtol=1e-5)
    assert scales == [1024.0, 512.0, 512.0, 1024.0]


def test_l2_regularizer_is_added_after_scaling():
    t = _job(lambda: flow.optimizer.SGD(_const(0.1), momentum=0), regularizer=flow.regularizers.l2(0.5))
    t(X)
    np.testing.assert_allclose(_v(), 1 - 0.1 * (X / 4 + 0.5 * 1.0), rtol=1e-6)


def test_clip_by_global_norm_is_source_faithful():
    clip = flow.optimizer.grad_clipping.by_global_norm(0.1)
    t = _job(lambda: flow.optimizer.SGD(_const(1.0), momentum=0, grad_clipping=clip))
    t(X)
    g = X / 4
    factor = min(1 / np.linalg.norm(g), 1 / 0.1)
    np.testing.assert_allclose(_v(), 1 - g * factor, rtol=1e-5)


def test_adamw_weight_decay_and_momentum_sgd_formulas():
    t = _job(lambda: flow.optimizer.AdamW(_const(0.01), weight_decay=0.1, do_bias_correction=False))
    t(X)
    g = X / 4
    m, v = 0.1 * g, 0.001 * g * g
    np.testing.assert_allclose(_v(), 1 - 0.01 * (m / (np.sqrt(v) + 1e-8) + 0.1 * 1.0), rtol=1e-5)
    flow.clear_default_session()
    t = _job(lambda: flow.optimizer.SGD(_const(0.1)))  # momentum defaults to 0.9
    t(X)
    t(X)
    g = X / 4
    m1 = -0.1 * g
    m2 = 0.9 * m1 - 0.1 * g
    np.testing.assert_allclose(_v(), 1 + m1 + m2, rtol=1e-5)


def test_combined_optimizer_updates_each_variable_with_its_own_rule():
    @flow.global_function(type="train")
    def t(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        a = flow.get_variable("a", shape=(4,), initializer=flow.constant_initializer(1.0))
        b = flow.get_variable("b", shape=(4,), initializer=flow.constant_initializer(1.0))
        loss = a * x + b * x
        flow.optimizer.CombinedOptimizer([
            flow.optimizer.SGD(_const(0.1), momentum=0, variables=["a"]),
            flow.optimizer.SGD(_const(1.0), momentum=0, variables=["b"])]).minimize(loss)
        return loss

    t(X)
    vs = flow.get_all_variables()
    np.testing.assert_allclose(vs["a"].numpy(), 1 - 0.1 * X / 4, rtol=1e-6)
    np.testing.assert_allclose(vs["b"].numpy(), 1 - 1.0 * X / 4, rtol=1e-6)


def test_learning_rate_follows_the_schedule_and_the_step_counter():
    sched = flow.optimizer.PiecewiseConstantScheduler([1], [0.1, 0.01])  # step 0, 1 -> 0.1; step 2 -> 0.01
    t = _job(lambda: flow.optimizer.SGD(sched, momentum=0))
    for _ in range(3):
        t(X)
    np.testing.assert_allclose(_v(), 1 - (0.1 + 0.1 + 0.01) * X / 4, rtol=1e-5)


def test_lars_on_a_split_variable_trains_as_on_one_device(monkeypatch):
    """LARS reads the whole variable's norms: on a model-parallel variable they are summed over the pieces
    (tests/test_split_norms.py has LAMB, meshes and uneven splits)."""
    monkeypatch.setenv("ONEFLOW_COMPAT_SEED", "3")  # the same initial values in both sessions

    def run(devices):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)

        @flow.global_function(type="train")
        def t(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
            y = flow.layers.dense(x, 4, name="d", model_distribute=flow.distribute.split(0),
                                  kernel_initializer=flow.random_normal_initializer())
            loss = flow.math.reduce_mean(y * y)
            flow.optimizer.LARS(_const(0.1), lars_coefficient=0.01).minimize(loss)
            return loss

        x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
        losses = [t(x) for _ in range(3)]
        return losses, flow.get_all_variables()["d-weight"].numpy()

    one, two = run(1), run(2)
    np.testing.assert_allclose(two[0], one[0], rtol=1e-6)
    np.testing.assert_allclose(two[1], one[1], rtol=1e-6, atol=1e-7)
    assert not np.allclose(one[0][0], one[0][-1])  # it trained
