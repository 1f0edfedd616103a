"""`flow.optim.lr_scheduler`'s OneFlow 0.9 schedulers (issue 21): ConstantLR, LinearLR, PolynomialLR,
CosineAnnealingWarmRestarts, SequentialLR, WarmupLR, ChainedScheduler, ReduceLROnPlateau.

Against torch.optim.lr_scheduler where the formulas agree (skipped without torch), else against closed forms written
here from OneFlow's files (python/oneflow/nn/optimizer/<name>.py@v0.9.0); state dicts resume a schedule.
"""
import math

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn
from oneflow_compat.optim import lr_scheduler as S

BASES = (0.1, 0.04)


def _opt(bases=BASES):
    a, b = nn.Parameter(flow.ones(2)), nn.Parameter(flow.ones(3))
    return flow.optim.SGD([{"params": [a]}, {"params": [b], "lr": bases[1]}], lr=bases[0], momentum=0.9)


def _lrs(opt, sch, steps, metric=None):
    """Each group's rate before each of `steps` optimizer steps."""
    out = []
    for i in range(steps):
        out.append([g["lr"] for g in opt.param_groups])
        sch.step() if metric is None else sch.step(metric(i))
    return np.array(out)


def _torch_lrs(make, steps, metric=None):
    torch = pytest.importorskip("torch")
    a, b = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([{"params": [a]}, {"params": [b], "lr": BASES[1]}], lr=BASES[0], momentum=0.9)
    sch = make(torch.optim.lr_scheduler, opt)
    out = []
    for i in range(steps):
        out.append([g["lr"] for g in opt.param_groups])
        opt.step()
        sch.step() if metric is None else sch.step(metric(i))
    return np.array(out)


TORCH_CASES = {
    "constant": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=4),
    "linear": lambda m, o: m.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=6),
    "warm_restarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=1, eta_min=0.001),
    "warm_restarts_mult": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.001),
    # PyTorch restarts the next scheduler at its step 0: OneFlow's interval_rescaling=True
    "sequential": lambda m, o: m.SequentialLR(o, [m.ConstantLR(o, factor=0.5, total_iters=10),
                                                  m.ExponentialLR(o, gamma=0.8)], milestones=[3],
                                              **({} if m is torch_module() else {"interval_rescaling": True})),
    "chained": lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=3),
                                                m.ExponentialLR(o, gamma=0.9)]),
}


def torch_module():
    import torch

    return torch.optim.lr_scheduler


@pytest.mark.parametrize("case", sorted(TORCH_CASES))
def test_schedulers_match_torch(case):
    want = _torch_lrs(TORCH_CASES[case], 16)
    opt = _opt()
    got = _lrs(opt, TORCH_CASES[case](S, opt), 16)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    assert len(set(got[:, 0])) >= 2  # the schedule moved


@pytest.mark.parametrize("mode,threshold_mode,cooldown", [("min", "rel", 0), ("max", "abs", 2), ("min", "abs", 1)])
def test_reduce_lr_on_plateau_matches_torch(mode, threshold_mode, cooldown):
    metrics = [5, 4, 4, 4.5, 4, 4, 3.9, 3.9, 3.9, 3.9, 3.9, 3, 3, 3, 3, 3, 3, 3]
    sign = 1 if mode == "min" else -1
    metric = lambda i: sign * metrics[i]  # noqa: E731
    make = lambda m, o: m.ReduceLROnPlateau(o, mode=mode, factor=0.5, patience=1, threshold=0.05,  # noqa: E731
                                             threshold_mode=threshold_mode, cooldown=cooldown, min_lr=[0.01, 0.02])
    want = _torch_lrs(make, len(metrics), metric)
    opt = _opt()
    sch = make(S, opt)
    got = _lrs(opt, sch, len(metrics), metric)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got[-1, 1] == 0.02 and got[-1, 0] < BASES[0]  # min_lr per group holds
    assert sch.get_last_lr() == [g["lr"] for g in opt.param_groups]


def _closed(fn, steps=16):
    return np.array([[fn(base, t) for base in BASES] for t in range(steps)])


def test_polynomial_lr_closed_form():
    opt = _opt()
    got = _lrs(opt, S.PolynomialLR(opt, decay_batch=5, end_learning_rate=0.001, power=2.0), 16)
    np.testing.assert_allclose(got, _closed(lambda b, t: (b - 0.001) * (1 - min(t, 5) / 5) ** 2 + 0.001), rtol=1e-12)
    opt = _opt()
    got = _lrs(opt, S.PolynomialLR(opt, decay_batch=5, power=1.0, cycle=True), 16)
    want = _closed(lambda b, t: (b - 1e-4) * (1 - max(t, 1) / (5 * math.ceil(max(t, 1) / 5))) + 1e-4)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(ValueError, match="decay_batch must greater than zero"):
        S.PolynomialLR(_opt(), decay_batch=0)


def test_warm_restarts_decay_rate_and_restart_limit():
    opt = _opt()
    got = _lrs(opt, S.CosineAnnealingWarmRestarts(opt, T_0=4, decay_rate=0.5, restart_limit=2, eta_min=0.01), 12)

    def want(b, t):
        cycle, inner = t // 4, t % 4
        if cycle >= 2:
            return 0.01
        return 0.01 + (b * 0.5 ** cycle - 0.01) * 0.5 * (1 + math.cos(math.pi * inner / 4))

    np.testing.assert_allclose(got, _closed(want, 12), rtol=1e-12)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 0"):
        S.CosineAnnealingWarmRestarts(_opt(), T_0=2, T_mult=0)


def test_warmup_lr_linear_joins_the_scheduler_and_prefix_shifts_it():
    # OneFlow's WarmupLR (no PyTorch counterpart): linear from base·factor to where the scheduler is at
    # warmup_iters, then the scheduler at its own (absolute) step; it needs one base rate for every group
    opt = _opt((0.1, 0.1))
    got = _lrs(opt, S.WarmupLR(S.ExponentialLR(opt, gamma=0.9), warmup_factor=0.1, warmup_iters=4), 10)

    def want(b, t):
        if t < 4:
            end = 0.9 ** 4
            return 0.1 * (0.1 + (end - 0.1) * t / 4)
        return 0.1 * 0.9 ** t

    np.testing.assert_allclose(got, _closed(want, 10), rtol=1e-12)
    with pytest.raises(ValueError, match="The param_groups in optimizer have different warmup configs"):
        S.WarmupLR(S.ExponentialLR(_opt(), gamma=0.9))
    # warmup_prefix: the warm-up ends at base, and the scheduler counts from the end of the warm-up
    opt = _opt()
    got = _lrs(opt, S.WarmupLR(S.ExponentialLR(opt, gamma=0.9), warmup_factor=0.1, warmup_iters=4,
                               warmup_prefix=True), 10)
    want = _closed(lambda b, t: b * (0.1 + 0.9 * t / 4) if t < 4 else b * 0.9 ** (t - 4), 10)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # constant warm-up on an optimizer alone
    opt = _opt()
    got = _lrs(opt, S.WarmupLR(opt, warmup_factor=0.5, warmup_iters=3, warmup_method="constant"), 6)
    np.testing.assert_allclose(got, _closed(lambda b, t: b * (0.5 if t < 3 else 1.0), 6), rtol=1e-12)
    with pytest.raises(ValueError, match="'warmup_method' must be 'linear' or 'constant', but got cosine"):
        S.WarmupLR(_opt(), warmup_method="cosine")
    with pytest.raises(ValueError, match="warmup_iters can't be equal to 0"):
        S.WarmupLR(_opt(), warmup_iters=0)


def test_sequential_without_rescaling_uses_absolute_steps():
    opt = _opt()
    sch = S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.5, total_iters=10), S.ExponentialLR(opt, gamma=0.8)],
                         milestones=[3])
    got = _lrs(opt, sch, 8)
    np.testing.assert_allclose(got, _closed(lambda b, t: b * 0.5 if t < 3 else b * 0.8 ** t, 8), rtol=1e-12)
    with pytest.raises(ValueError, match="number of schedulers 2 and the number of milestones to be equal to 2"):
        S.SequentialLR(opt, sch.schedulers, milestones=[3, 4])
    with pytest.raises(ValueError, match="ChainedScheduler expects a list of schedulers"):
        S.ChainedScheduler([opt])


@pytest.mark.parametrize("make", [
    lambda o: S.WarmupLR(S.CosineAnnealingWarmRestarts(o, T_0=3), warmup_iters=2, warmup_prefix=True),
    lambda o: S.ChainedScheduler([S.LinearLR(o, total_iters=4), S.ExponentialLR(o, gamma=0.9)]),
    lambda o: S.PolynomialLR(o, decay_batch=6, power=0.5),
])
def test_state_dict_resumes_the_schedule(make):
    opt = _opt()
    straight = _lrs(opt, make(opt), 9)
    opt = _opt()
    sch = make(opt)
    first = _lrs(opt, sch, 4)
    saved = sch.state_dict()
    opt2 = _opt()
    sch2 = make(opt2)
    sch2.load_state_dict(saved)
    for group, lr in zip(opt2.param_groups, sch.get_last_lr()):
        group["lr"] = lr
    rest = _lrs(opt2, sch2, 5)
    np.testing.assert_allclose(np.concatenate([first, rest]), straight, rtol=1e-12)
