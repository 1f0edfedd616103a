"""Optimizer classes, legacy model_update_conf, clipping, loss scaling and regularizer confs."""
import inspect
import math

import numpy as np
import pytest

from oneflow_compat import regularizers
from oneflow_compat.kernels import optim as kernels
from oneflow_compat.optimizer import grad_clipping, legacy_conf, loss_scale, warmup
from oneflow_compat.optimizer import lr_scheduler as sched
from oneflow_compat.optimizer import optimizers as opts

LR = sched.PiecewiseConstantScheduler([], [0.1])
COMMON_TAIL = ["grad_clipping", "train_step_lbn", "loss_scale_policy", "variables"]


def _params(cls):
    return {name: p.default for name, p in inspect.signature(cls).parameters.items()}


def test_legacy_constructor_signatures():
    assert list(_params(opts.SGD)) == ["lr_scheduler", "loss_scale_factor", "momentum"] + COMMON_TAIL
    assert _params(opts.SGD)["momentum"] == 0.9
    assert list(_params(opts.SGDW)) == ["lr_scheduler", "loss_scale_factor", "momentum", "weight_decay",
                                        "weight_decay_includes", "weight_decay_excludes"] + COMMON_TAIL
    adam = _params(opts.Adam)
    assert list(adam) == ["lr_scheduler", "beta1", "beta2", "epsilon", "do_bias_correction",
                          "loss_scale_factor"] + COMMON_TAIL
    assert (adam["beta1"], adam["beta2"], adam["epsilon"], adam["do_bias_correction"]) == (0.9, 0.999, 1e-8, False)
    assert list(_params(opts.AdamW))[:9] == ["lr_scheduler", "beta1", "beta2", "epsilon", "do_bias_correction",
                                             "loss_scale_factor", "weight_decay", "weight_decay_includes",
                                             "weight_decay_excludes"]
    assert list(_params(opts.LazyAdam)) == ["lr_scheduler", "beta1", "beta2", "epsilon",
                                            "loss_scale_factor"] + COMMON_TAIL
    rms = _params(opts.RMSProp)
    assert (rms["decay_rate"], rms["epsilon"], rms["centered"]) == (0.99, 1e-8, False)
    lars = _params(opts.LARS)
    assert list(lars)[:5] == ["lr_scheduler", "momentum_beta", "epsilon", "lars_coefficient", "loss_scale_factor"]
    assert (lars["momentum_beta"], lars["epsilon"], lars["lars_coefficient"], lars["weight_decay"]) == \
        (0.9, 1e-9, 0.0001, None)
    lamb = _params(opts.LAMB)
    assert (lamb["beta1"], lamb["beta2"], lamb["epsilon"], lamb["weight_decay"]) == (0.9, 0.999, 1e-6, None)
    assert list(_params(opts.CombinedOptimizer)) == ["optimizers", "loss_scale_factor", "train_step_lbn",
                                                     "loss_scale_policy"]


def test_loss_scale_arguments():
    sgd = opts.SGD(LR, loss_scale_factor=128.0)
    assert sgd.loss_scale_factor == 128.0
    assert isinstance(sgd.loss_scale_policy, loss_scale.StaticLossScalePolicy)
    assert sgd.loss_scale_policy.loss_scale_factor == 128.0
    with pytest.raises(AssertionError):
        opts.Adam(LR, loss_scale_factor=2.0, loss_scale_policy=loss_scale.static_loss_scale(2.0))
    dynamic = loss_scale.dynamic_loss_scale()
    assert opts.Adam(LR, loss_scale_policy=dynamic).loss_scale_policy is dynamic
    with pytest.raises(TypeError):
        opts.Adam(LR, loss_scale_policy=2.0)
    assert opts.SGD(LR).loss_scale_policy is None and opts.SGD(LR).loss_scale_factor is None


@pytest.mark.parametrize("optimizer, expected", [
    (opts.SGD(LR, momentum=0), []),
    (opts.SGD(LR), [("momentum", 0.0)]),
    (opts.SGDW(LR, momentum=0.5, weight_decay=0.1), [("momentum", 0.0)]),
    (opts.Adam(LR), [("m", 0.0), ("v", 0.0)]),
    (opts.AdamW(LR, weight_decay=0.1), [("m", 0.0), ("v", 0.0)]),
    (opts.LazyAdam(LR), [("m", 0.0), ("v", 0.0)]),
    (opts.RMSProp(LR), [("mean_square", 0.0)]),
    (opts.RMSProp(LR, centered=True), [("mean_square", 0.0), ("mean_gradient", 0.0)]),
    (opts.LARS(LR), [("momentum", 0.0)]),
    (opts.LAMB(LR, beta1=0.8, beta2=0.95), [("m", 0.0), ("v", 0.0), ("beta1_t", 0.8), ("beta2_t", 0.95)]),
])
def test_state_specs(optimizer, expected):
    assert [tuple(s) for s in optimizer.state_specs("dense1-weight", (3, 4), np.float32)] == expected
    for suffix, _ in expected:
        shape = optimizer.state_shape(suffix, (3, 4))
        assert shape == ((1,) if suffix in ("beta1_t", "beta2_t") else (3, 4))


def test_weight_decay_filters_use_partial_regex_matches():
    assert opts.Adam(LR).weight_decay_rate("w") == 0.0
    assert opts.SGDW(LR, weight_decay=0.5).weight_decay_rate("anything") == 0.5
    excludes = opts.AdamW(LR, weight_decay=0.5, weight_decay_excludes="bias")
    assert excludes.weight_decay_excludes == ["bias"]
    assert (excludes.weight_decay_rate("dense1-bias"), excludes.weight_decay_rate("dense1-weight")) == (0.0, 0.5)
    includes = opts.LAMB(LR, weight_decay=0.25, weight_decay_includes=["^conv", "weight$"])
    assert [includes.weight_decay_rate(n) for n in ("conv1-bias", "dense1-weight", "dense1-bias")] == [0.25, 0.25, 0]
    with pytest.raises(AssertionError):
        opts.LARS(LR, weight_decay=0.1, weight_decay_includes="a", weight_decay_excludes="b")


def _run_update(optimizer, dtype=np.float32, steps=3, shape=(4, 3)):
    rng = np.random.default_rng(1)
    w = rng.standard_normal(shape).astype(dtype)
    states = [np.full(optimizer.state_shape(s, shape), init, dtype)
              for s, init in optimizer.state_specs("v", shape, dtype)]
    grads = [rng.standard_normal(shape).astype(dtype) for _ in range(steps)]
    for t, g in enumerate(grads):
        optimizer.update(np, w, g, states, lr=0.05, step=t, weight_decay=optimizer.weight_decay_rate("v"))
    return w, states, grads


def test_update_dispatches_to_the_right_kernel_with_the_optimizers_hyper_parameters():
    cases = [
        (opts.SGD(LR, momentum=0), lambda w, s, g, t: kernels.sgd_update(np, w, g, lr=0.05)),
        (opts.SGD(LR, momentum=0.5), lambda w, s, g, t: kernels.momentum_update(np, w, s[0], g, lr=0.05, beta=0.5)),
        (opts.SGDW(LR, momentum=0, weight_decay=0.2),
         lambda w, s, g, t: kernels.sgd_update(np, w, g, lr=0.05, weight_decay=0.2)),
        (opts.Adam(LR, beta1=0.8, do_bias_correction=True),
         lambda w, s, g, t: kernels.adam_update(np, w, s[0], s[1], g, lr=0.05, beta1=0.8, beta2=0.999, epsilon=1e-8,
                                                do_bias_correction=True, step=t)),
        (opts.AdamW(LR, weight_decay=0.3),
         lambda w, s, g, t: kernels.adam_update(np, w, s[0], s[1], g, lr=0.05, beta1=0.9, beta2=0.999, epsilon=1e-8,
                                                weight_decay=0.3, step=t)),
        (opts.LazyAdam(LR, epsilon=1e-6),
         lambda w, s, g, t: kernels.lazy_adam_update(np, w, s[0], s[1], g, lr=0.05, beta1=0.9, beta2=0.999,
                                                     epsilon=1e-6, step=t)),
        (opts.RMSProp(LR, decay_rate=0.9, centered=True),
         lambda w, s, g, t: kernels.rmsprop_centered_update(np, w, s[0], s[1], g, lr=0.05, decay_rate=0.9,
                                                            epsilon=1e-8)),
        (opts.RMSProp(LR, epsilon=1e-3),
         lambda w, s, g, t: kernels.rmsprop_update(np, w, s[0], g, lr=0.05, decay_rate=0.99, epsilon=1e-3)),
        (opts.LARS(LR, lars_coefficient=0.01, weight_decay=0.1),
         lambda w, s, g, t: kernels.lars_update(np, w, s[0], g, lr=0.05, momentum_beta=0.9, epsilon=1e-9,
                                                lars_coefficient=0.01, weight_decay=0.1)),
        (opts.LAMB(LR, weight_decay=0.1),
         lambda w, s, g, t: kernels.lamb_update(np, w, *s, g, lr=0.05, beta1=0.9, beta2=0.999, epsilon=1e-6,
                                                weight_decay=0.1)),
    ]
    for optimizer, direct in cases:
        w, states, grads = _run_update(optimizer)
        rng = np.random.default_rng(1)
        w_ref = rng.standard_normal((4, 3)).astype(np.float32)
        states_ref = [np.full(optimizer.state_shape(s, (4, 3)), init, np.float32)
                      for s, init in optimizer.state_specs("v", (4, 3), np.float32)]
        for t, g in enumerate(grads):
            direct(w_ref, states_ref, g, t)
        np.testing.assert_array_equal(w, w_ref, err_msg=repr(optimizer))
        for a, b in zip(states, states_ref):
            np.testing.assert_array_equal(a, b, err_msg=repr(optimizer))
        assert not np.array_equal(w, np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32))


def test_rmsprop_ignores_weight_decay_like_oneflow():
    rms = opts.RMSProp(LR)
    a, b = np.ones(3, np.float32), np.ones(3, np.float32)
    sa, sb = [np.zeros(3, np.float32)], [np.zeros(3, np.float32)]
    g = np.array([0.1, 0.2, 0.3], np.float32)
    rms.update(np, a, g, sa, lr=0.1, step=0, weight_decay=0.0)
    rms.update(np, b, g, sb, lr=0.1, step=0, weight_decay=0.5)
    np.testing.assert_array_equal(a, b)


def test_variables_and_minimize(monkeypatch):
    assert opts.SGD(LR).resolve_variables(["a", "b"]) == ["a", "b"]
    assert opts.SGD(LR, variables=("b",)).resolve_variables(["a", "b"]) == ["b"]
    assert opts.Adam(LR, variables=lambda: ["c"]).resolve_variables(["a"]) == ["c"]

    import oneflow_compat.framework.session as session

    calls = []
    monkeypatch.setattr(session, "register_minimize", lambda optimizer, loss: calls.append((optimizer, loss)))
    sgd = opts.SGD(LR)
    sgd.minimize("loss-blob")
    assert calls == [(sgd, "loss-blob")]


def test_combined_optimizer():
    with pytest.raises(AssertionError, match="multi-optimizer case"):
        opts.CombinedOptimizer([opts.SGD(LR)])
    with pytest.raises(AssertionError, match="Only one loss scale policy"):
        opts.CombinedOptimizer([opts.SGD(LR, loss_scale_factor=2.0), opts.Adam(LR)])
    with pytest.raises(AssertionError, match="Only one train step lbn"):
        opts.CombinedOptimizer([opts.SGD(LR, train_step_lbn="x/out"), opts.Adam(LR)])
    sgd, adam = opts.SGD(LR, variables=["a"]), opts.Adam(LR, variables=["b", "c"])
    combined = opts.CombinedOptimizer([sgd, adam], loss_scale_factor=4.0)
    assert combined.leaf_optimizers() == [sgd, adam]
    assert combined.resolve_variables(["a", "b", "c"]) == ["a", "b", "c"]
    assert combined.loss_scale_policy.loss_scale_factor == 4.0
    overlapping = opts.CombinedOptimizer([sgd, opts.Adam(LR, variables=["a"])])
    with pytest.raises(AssertionError, match="variable 'a'"):
        overlapping.resolve_variables(["a"])
    with pytest.raises(TypeError, match="leaf_optimizers"):
        combined.state_specs("a", (1,), np.float32)


def test_clipping_by_global_norm_is_source_faithful():
    clip = grad_clipping.by_global_norm(2.0)
    assert clip.clip_norm == 2.0
    assert clip.scale(4.0) == 0.25  # ‖g‖ > clip: g/‖g‖, i.e. TF's result divided by clip_norm
    assert clip.scale(0.5) == 0.5  # ‖g‖ < clip: still scaled by 1/clip_norm (TF would leave g unchanged)
    assert clip.scale(0.0) == 0.5
    assert clip.scale_from_squared_norm(16.0) == 0.25
    for norm in (0.5, 4.0, 10.0):
        tf_scale = 2.0 / max(norm, 2.0)
        assert clip.scale(norm) == pytest.approx(tf_scale / 2.0)
    assert grad_clipping.by_global_norm(1.0).scale(0.5) == 1.0  # clip_norm = 1: identical to TF


def test_dynamic_loss_scale_transitions():
    policy = loss_scale.dynamic_loss_scale(initial_loss_scale=8.0, increment_period=3, multiplier=2.0)
    assert policy.initial_state() == (8.0, 0)
    state = policy.initial_state()
    trace = []
    for finite in [True, True, True, True, False, True, False, False, False, False, False]:
        scale, good, apply = policy.next_state(state[0], state[1], finite)
        trace.append((scale, good, apply))
        state = (scale, good)
    assert trace == [(8.0, 1, True), (8.0, 2, True), (16.0, 0, True), (16.0, 1, True), (8.0, 0, False),
                     (8.0, 1, True), (4.0, 0, False), (2.0, 0, False), (1.0, 0, False), (1.0, 0, False),
                     (1.0, 0, False)]
    big = loss_scale.dynamic_loss_scale(initial_loss_scale=3e38, increment_period=1)
    assert big.next_state(3e38, 0, True) == (float(np.finfo(np.float32).max), 0, True)
    default = loss_scale.DynamicLossScalePolicy()
    assert (default.initial_loss_scale, default.increment_period, default.multiplier) == (2 ** 30, 2000, 2.0)


def test_regularizer_confs():
    assert (regularizers.l1(0.5).l1, regularizers.l1(0.5).l2) == (0.5, 0.0)
    assert (regularizers.l2().l1, regularizers.l2().l2) == (0.0, 0.01)
    assert regularizers.l1_l2() == regularizers.RegularizerConf(0.01, 0.01)
    assert list(inspect.signature(regularizers.l1).parameters) == ["l"]
    assert list(inspect.signature(regularizers.l1_l2).parameters) == ["l1", "l2"]


# ---------------------------------------------------------------------------------------------------------------
# legacy func_config.train.model_update_conf
# ---------------------------------------------------------------------------------------------------------------

def test_legacy_conf_update_rules_and_defaults():
    naive = legacy_conf.optimizer_from_model_update_conf({"naive_conf": {}}, 0.1)
    assert isinstance(naive, opts.SGD) and naive.momentum == 0 and naive.lr_scheduler.lr_at(1000) == np.float32(0.1)
    assert legacy_conf.optimizer_from_model_update_conf({"momentum_conf": {}}, 0.1).momentum == 0.9
    adam = legacy_conf.optimizer_from_model_update_conf({"adam_conf": {"beta2": 0.99}}, 0.001, secondary_lr=0.5)
    assert isinstance(adam, opts.Adam)
    assert (adam.beta1, adam.beta2, adam.epsilon, adam.do_bias_correction) == (0.9, 0.99, 1e-8, False)
    lamb = legacy_conf.optimizer_from_model_update_conf({"lamb_conf": {}}, 0.001)
    assert isinstance(lamb, opts.LAMB) and lamb.epsilon == 1e-8  # proto default, not the Python API's 1e-6
    rms = legacy_conf.optimizer_from_model_update_conf({"rmsprop_conf": {"centered": True}}, 0.01)
    assert isinstance(rms, opts.RMSProp) and rms.centered and rms.decay_rate == 0.99
    lars = legacy_conf.optimizer_from_model_update_conf({"lars_conf": {"lars_coefficient": 0.01}}, 0.01)
    assert isinstance(lars, opts.LARS) and (lars.momentum_beta, lars.lars_coefficient) == (0.9, 0.01)
    assert isinstance(legacy_conf.optimizer_from_model_update_conf({"lazy_adam_conf": {}}, 0.01), opts.LazyAdam)
    assert naive.variables is None  # every variable of the job


def test_legacy_conf_schedules_warmup_clipping_weight_decay():
    conf = {
        "momentum_conf": {"beta": 0.5},
        "learning_rate_decay": {"cosine_conf": {"decay_batches": 100, "alpha": 0.1}},
        "warmup_conf": {"linear_conf": {"warmup_batches": 10, "start_multiplier": 0.2}},
        "clip_conf": {"clip_by_global_norm": {"clip_norm": 5.0}},
        "weight_decay_conf": {"weight_decay_rate": 0.01, "excludes": {"pattern": ["bias", "gamma"]}},
    }
    optimizer = legacy_conf.optimizer_from_model_update_conf(conf, 0.1)
    reference = sched.CosineScheduler(0.1, 100, alpha=0.1, warmup=warmup.linear(10, 0.2))
    steps = range(0, 120, 7)
    assert [optimizer.lr_scheduler.lr_at(t) for t in steps] == [reference.lr_at(t) for t in steps]
    assert optimizer.grad_clipping.clip_norm == 5.0
    assert [optimizer.weight_decay_rate(n) for n in ("bn-gamma", "d-bias", "d-weight")] == [0.0, 0.0, 0.01]

    piecewise = legacy_conf.optimizer_from_model_update_conf({
        "naive_conf": {},
        "learning_rate_decay": {"piecewise_constant_conf": {"boundaries": [5], "values": [1.0, 0.5]}},
        "warmup_conf": {"constant_conf": {"warmup_batches": 2, "multiplier": 0.5}}}, 0.2)
    # warmup scales primary_lr (0.2), the decay then reads the values.
    assert [piecewise.lr_scheduler.lr_at(t) for t in (0, 1, 2, 5, 6)] == [np.float32(0.1)] * 2 + [1.0, 1.0, 0.5]

    scaling = legacy_conf.optimizer_from_model_update_conf({
        "naive_conf": {},
        "learning_rate_decay": {"piecewise_scaling_conf": {"boundaries": [3], "scales": [1.0, 0.25]}}}, 0.4)
    assert [scaling.lr_scheduler.lr_at(t) for t in (3, 4)] == [np.float32(0.4), np.float32(0.1)]

    exponential = legacy_conf.optimizer_from_model_update_conf({
        "naive_conf": {}, "learning_rate_decay": {"exponential_conf": {"decay_batches": 10, "decay_rate": 0.5,
                                                                       "staircase": True}}}, 1.0)
    assert [exponential.lr_scheduler.lr_at(t) for t in (9, 10, 25)] == [1.0, 0.5, 0.25]
    includes = legacy_conf.optimizer_from_model_update_conf(
        {"adam_conf": {}, "weight_decay_conf": {"weight_decay_rate": 0.1, "includes": {"pattern": "weight"}}}, 0.1)
    assert [includes.weight_decay_rate(n) for n in ("x-weight", "x-bias")] == [0.1, 0.0]


def test_legacy_conf_errors():
    with pytest.raises(ValueError, match="bogus_conf"):
        legacy_conf.optimizer_from_model_update_conf({"naive_conf": {}, "bogus_conf": {}}, 0.1)
    with pytest.raises(ValueError, match="several update rules"):
        legacy_conf.optimizer_from_model_update_conf({"naive_conf": {}, "adam_conf": {}}, 0.1)
    with pytest.raises(NotImplementedError):
        legacy_conf.optimizer_from_model_update_conf({"clip_conf": {"clip_by_global_norm": {"clip_norm": 1}}}, 0.1)
    with pytest.raises(ValueError, match="primary_lr"):
        legacy_conf.optimizer_from_model_update_conf({"naive_conf": {}}, None)
    with pytest.raises(ValueError, match="momentum_conf has no field"):
        legacy_conf.optimizer_from_model_update_conf({"momentum_conf": {"betta": 0.9}}, 0.1)
    with pytest.raises(ValueError, match="decay_batches"):
        legacy_conf.optimizer_from_model_update_conf({"naive_conf": {}, "learning_rate_decay": {"cosine_conf": {}}},
                                                     0.1)
    with pytest.raises(AssertionError):
        legacy_conf.optimizer_from_model_update_conf(
            {"naive_conf": {}, "warmup_conf": {"constant_conf": {"warmup_batches": 3, "multiplier": 2}}}, 0.1)
    assert math.isclose(legacy_conf.optimizer_from_model_update_conf(
        {"naive_conf": {}, "clip_conf": {"clip_by_global_norm": {"max_norm": 3}}}, 0.1).grad_clipping.clip_norm, 3)
