import math

import numpy as np
import pytest

from oneflow_compat.optimizer import lr_scheduler as sched
from oneflow_compat.optimizer import warmup

STEPS = [0, 1, 2, 5, 9, 10, 11, 25, 99, 100, 101, 250, 1000]


def f32(x):
    return float(np.float32(x))


def check(scheduler, reference, steps=STEPS):
    for t in steps:
        got = scheduler.lr_at(t)
        assert isinstance(got, float)
        assert got == f32(got), "lr_at must return a float32 value"
        assert got == pytest.approx(f32(reference(t)), rel=2e-7, abs=1e-30), "step %d" % t


def test_piecewise_constant_boundary_belongs_to_the_previous_value():
    s = sched.PiecewiseConstantScheduler([10, 100], [0.1, 0.01, 0.001])
    assert s.base_lr == 0.1
    expected = {0: 0.1, 9: 0.1, 10: 0.1, 11: 0.01, 100: 0.01, 101: 0.001, 5000: 0.001}
    assert {t: s.lr_at(t) for t in expected} == {t: f32(v) for t, v in expected.items()}
    assert sched.PiecewiseConstantScheduler([], [0.005]).lr_at(123456) == f32(0.005)
    with pytest.raises(AssertionError):
        sched.PiecewiseConstantScheduler([10], [0.1])


def test_piecewise_scaling():
    s = sched.PiecewiseScalingScheduler(0.1, [5, 10], [0.5, 0.1])
    assert s.scale == [1, 0.5, 0.1]
    check(s, lambda t: f32(0.1) * (1 if t <= 5 else 0.5 if t <= 10 else 0.1))
    scalar = sched.PiecewiseScalingScheduler(0.2, [3, 6], 0.5)
    assert scalar.scale == [1, 0.5, 0.5]
    with pytest.raises(AssertionError):
        sched.PiecewiseScalingScheduler(0.1, [5, 10], [0.5])


def test_cosine():
    base = f32(0.01)
    check(sched.CosineScheduler(0.01, 100),
          lambda t: base * 0.5 * (1 + np.cos(np.pi * min(t, 100) / 100)))
    check(sched.CosineScheduler(0.01, 100, alpha=0.1),
          lambda t: base * (0.9 * 0.5 * (1 + np.cos(np.pi * min(t, 100) / 100)) + 0.1))
    assert sched.CosineScheduler(0.01, 100, alpha=0.1).lr_at(100000) == f32(base * 0.1)


def test_polynomial_non_cycle_and_cycle():
    base, end = f32(0.001), 0.00001
    check(sched.PolynomialScheduler(0.001, 100, end_learning_rate=end, power=2),
          lambda t: (base - end) * (1 - min(t, 100) / 100) ** 2 + end)

    def cyclic(t):
        t_eff = max(t, 1)
        period = 100 * math.ceil(t_eff / 100)
        return (base - end) * (1 - t_eff / period) ** 0.5 + end

    check(sched.PolynomialScheduler(0.001, 100, end_learning_rate=end, power=0.5, cycle=True), cyclic)
    # At t=100 a cycle ends exactly: the rate is the end rate; t=0 behaves like t=1.
    cycled = sched.PolynomialScheduler(0.001, 100, end_learning_rate=end, cycle=True)
    assert cycled.lr_at(100) == f32(end)
    assert cycled.lr_at(0) == cycled.lr_at(1)


def test_polynomial_misspelt_alias_warns(capsys):
    s = sched.PolynomialSchduler(0.1, 10)
    assert isinstance(s, sched.PolynomialScheduler)
    assert s.lr_at(5) == sched.PolynomialScheduler(0.1, 10).lr_at(5)
    assert "PolynomialSchduler will be removed in the future, use oneflow.optimizer.PolynomialScheduler" in \
        capsys.readouterr().out


def test_linear_cosine():
    base = f32(0.1)

    def reference(t, periods=0.5, alpha=0.0, beta=0.001):
        c = min(t, 100)
        return base * ((alpha + (100 - c) / 100) * 0.5 * (1 + np.cos(2 * np.pi * periods * c / 100)) + beta)

    check(sched.LinearCosineScheduler(0.1, 100), reference)
    check(sched.LinearCosineScheduler(0.1, 100, num_periods=2, alpha=0.2, beta=0.01),
          lambda t: reference(t, 2, 0.2, 0.01))


@pytest.mark.parametrize("staircase", [False, True])
def test_ratio_decays(staircase):
    base = f32(0.1)

    def p(t):
        return np.floor(t / 7) if staircase else t / 7

    check(sched.ExponentialScheduler(0.1, 7, 0.9, staircase=staircase), lambda t: base * 0.9 ** p(t))
    check(sched.InverseTimeScheduler(0.1, 7, 0.9, staircase=staircase), lambda t: base / (1 + 0.9 * p(t)))
    check(sched.NaturalExpScheduler(0.1, 7, 0.5, staircase=staircase), lambda t: base * np.exp(-0.5 * p(t)))


def test_base_lr_is_rounded_to_float32_before_the_double_schedule():
    # 0.1 as float32 is 0.100000001490116...; a double-only computation would differ in the last float32 bit
    # for some steps. Recompute the exponential schedule both ways and check we follow OneFlow's.
    s = sched.ExponentialScheduler(0.1, 3, 0.7)
    differing_steps = [t for t in range(50) if f32(f32(0.1) * 0.7 ** (t / 3)) != f32(0.1 * 0.7 ** (t / 3))]
    assert differing_steps  # the test can tell the two apart
    for t in range(50):
        assert s.lr_at(t) == f32(f32(0.1) * 0.7 ** (t / 3))


def test_constant_warmup_replaces_the_decay_then_decay_uses_raw_step():
    w = warmup.constant(10, 0.1)
    s = sched.CosineScheduler(0.01, 100, warmup=w)
    base = f32(0.01)
    for t in range(10):
        assert s.lr_at(t) == f32(base * 0.1)
    for t in (10, 11, 50, 100):
        assert s.lr_at(t) == f32(base * 0.5 * (1 + math.cos(math.pi * t / 100)))  # not t - 10


def test_linear_warmup():
    s = sched.PiecewiseConstantScheduler([20], [0.01, 0.001], warmup=warmup.linear(10, 0.1))
    base = f32(0.01)  # warmup scales values[0]
    check(s, lambda t: base * (0.1 + 0.9 * t / 10) if t < 10 else (0.01 if t <= 20 else 0.001),
          steps=list(range(0, 25)))
    zero_start = sched.ExponentialScheduler(1.0, 10, 0.5, warmup=warmup.linear(4, 0))
    assert [zero_start.lr_at(t) for t in range(6)] == [0.0, 0.25, 0.5, 0.75, f32(0.5 ** 0.4), f32(0.5 ** 0.5)]


def test_warmup_asserts():
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(AssertionError):
            warmup.constant(10, bad)
    for bad in (1, -0.1):
        with pytest.raises(AssertionError):
            warmup.linear(10, bad)
    warmup.linear(10, 0)
    with pytest.raises(AssertionError):
        warmup.linear(-1, 0.5)
    with pytest.raises(TypeError):
        sched.CosineScheduler(0.1, 10, warmup=0.5)
    # OneFlow v0.4.0 checks decay_batches > 0 where the decay is evaluated (learning_rate_schedule_kernel.cpp),
    # so a schedule whose decay steps are <= 0 still runs its warmup: the model zoo's short runs do this
    short = sched.CosineScheduler(0.1, -40, warmup=warmup.linear(50, 0))
    assert short.lr_at(49) == f32(f32(0.1) * (49 / 50))
    with pytest.raises(AssertionError, match=r"CosineScheduler: decay steps must be > 0, got -40 \(needed from "
                                             r"train step 50"):
        short.lr_at(50)
    for bad in (sched.CosineScheduler(0.1, 0), sched.PolynomialScheduler(0.1, 0),
                sched.ExponentialScheduler(0.1, 0, 0.5),
                sched.LinearCosineScheduler(0.1, -1)):
        with pytest.raises(AssertionError, match="decay steps must be > 0"):
            bad.lr_at(0)


def test_custom_scheduler():
    s = sched.CustomScheduler("lr_job/out")
    assert s.lbn == "lr_job/out" and s.base_lr is None and s.warmup is None
    with pytest.raises(RuntimeError, match="lr_job/out"):
        s.lr_at(0)
