"""Learning-rate schedulers of `flow.optimizer.*` (legacy-api.md §2.13), with OneFlow's exact arithmetic.

`lr_at(step)` is the learning rate used by the update at train step `step` (the value of the job's
`System-Train-TrainStep-<job>` counter before its increment, 0 on the first call). As in OneFlow's learning-rate
kernel: the base learning rate is a protobuf `float` (rounded to float32), the schedule is evaluated in double,
warmup replaces (never blends with) the decay while `step < warmup.steps`, and the result is stored as float32.
"""
import collections.abc
import math
import weakref

import numpy as np

from oneflow_compat.optimizer.warmup import WarmupConf


def _as_float32(x):
    return float(np.float32(x))


class LrScheduler:
    """Base class: `base_lr`, `lr_lbn` (CustomScheduler only), `warmup`, and `lr_at(step)`."""

    def __init__(self, base_lr=None, lr_lbn=None, warmup=None):
        if warmup is not None and not isinstance(warmup, WarmupConf):
            raise TypeError("warmup must be flow.optimizer.warmup.constant(...) or .linear(...), got %r" % (warmup,))
        self.base_lr = base_lr
        self.lr_lbn = lr_lbn
        self.warmup = warmup

    def _decayed(self, base_lr, step):
        """The decayed learning rate (double) at `step`, from the float32-rounded `base_lr`."""
        raise NotImplementedError

    def lr_at(self, step):
        step = int(step)
        # every variable's update of a train step asks for the same step's rate: the last answer is kept while
        # the step and the scheduler's (and its warmup's) fields are what they were
        state = (vars(self), vars(self.warmup) if self.warmup is not None else None)
        last = _LAST_RATE.get(self)
        if last is not None and last[0] == step and last[1] == state:
            return last[2]
        base = _as_float32(self.base_lr)
        if self.warmup is not None and self.warmup.active(step):
            value = self.warmup.lr(base, step)
        else:
            if "steps" in vars(self):
                _check_decay_steps(self, step)
            value = self._decayed(base, step)
        value = _as_float32(value)
        _LAST_RATE[self] = (step, tuple(None if d is None else _fields_copy(d) for d in state), value)
        return value

    def __repr__(self):
        fields = ", ".join("%s=%r" % (k, v) for k, v in vars(self).items() if v is not None and k != "lr_lbn")
        return "%s(%s)" % (type(self).__name__, fields)


_LAST_RATE = weakref.WeakKeyDictionary()  # scheduler -> (step, copies of its fields and its warmup's, rate)


def _fields_copy(fields):
    """The fields, lists and dicts among them copied (boundaries, values): a change in place shows as a change."""
    return {k: (list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v) for k, v in fields.items()}


def _check_decay_steps(scheduler, step):
    # OneFlow v0.4.0 (`oneflow/core/kernel/learning_rate_schedule_kernel.cpp`) checks `decay_batches > 0` inside
    # the decay functions, which run only once the warmup is over: a schedule whose decay steps are <= 0 (the model
    # zoo's `num_epochs < warmup_epochs` on a short run) trains through its warmup and fails at the first step that
    # needs the decay. The check is kept at that same point.
    if not (scheduler.steps > 0):
        raise AssertionError("%s: decay steps must be > 0, got %r (needed from train step %d, after the warmup)"
                             % (type(scheduler).__name__, scheduler.steps, step))


def _piecewise_index(boundaries, step):
    # A boundary step still uses the value before it: the first i with step <= boundaries[i].
    for i, boundary in enumerate(boundaries):
        if step <= boundary:
            return i
    return len(boundaries)


class PiecewiseConstantScheduler(LrScheduler):
    def __init__(self, boundaries, values, warmup=None):
        if not (len(boundaries) + 1 == len(values)):
            raise AssertionError()
        super().__init__(base_lr=values[0], warmup=warmup)
        self.boundaries = boundaries
        self.values = values

    def _decayed(self, base_lr, step):
        return float(self.values[_piecewise_index(self.boundaries, step)])


class PiecewiseScalingScheduler(LrScheduler):
    def __init__(self, base_lr, boundaries, scale, warmup=None):
        super().__init__(base_lr=base_lr, warmup=warmup)
        self.boundaries = boundaries
        if not isinstance(scale, collections.abc.Sequence):
            scale = [scale] * len(boundaries)
        if not (len(boundaries) == len(scale)):
            raise AssertionError()
        self.scale = [1] + list(scale)

    def _decayed(self, base_lr, step):
        return float(self.scale[_piecewise_index(self.boundaries, step)]) * base_lr


class CosineScheduler(LrScheduler):
    def __init__(self, base_lr, steps, alpha=0.0, warmup=None):
        super().__init__(base_lr=base_lr, warmup=warmup)
        self.steps = steps
        self.alpha = alpha

    def _decayed(self, base_lr, step):
        t = min(float(step), float(self.steps))
        cosine = 0.5 * (1.0 + math.cos(math.pi * t / self.steps))
        return base_lr * ((1.0 - self.alpha) * cosine + self.alpha)


class PolynomialScheduler(LrScheduler):
    def __init__(self, base_lr, steps, end_learning_rate=0.0001, power=1.0, cycle=False, warmup=None):
        super().__init__(base_lr=base_lr, warmup=warmup)
        self.steps = steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle

    def _decayed(self, base_lr, step):
        t, decay_steps = float(step), float(self.steps)
        if self.cycle:
            if step == 0:
                t = 1.0
            decay_steps = decay_steps * math.ceil(t / decay_steps)
        else:
            t = min(t, decay_steps)
        end = float(self.end_learning_rate)
        return (base_lr - end) * math.pow(1.0 - t / decay_steps, self.power) + end


class PolynomialSchduler(PolynomialScheduler):
    """Misspelt legacy alias of PolynomialScheduler (prints OneFlow's deprecation warning)."""

    def __init__(self, base_lr, steps, end_learning_rate=0.0001, power=1.0, cycle=False, warmup=None):
        print("WARNING:", "oneflow.optimizer.PolynomialSchduler",
              "will be removed in the future, use {} instead.".format("oneflow.optimizer.PolynomialScheduler"))
        super().__init__(base_lr, steps, end_learning_rate=end_learning_rate, power=power, cycle=cycle,
                         warmup=warmup)


class LinearCosineScheduler(LrScheduler):
    def __init__(self, base_lr, steps, num_periods=0.5, alpha=0.0, beta=0.001, warmup=None):
        super().__init__(base_lr=base_lr, warmup=warmup)
        self.steps = steps
        self.num_periods = num_periods
        self.alpha = alpha
        self.beta = beta

    def _decayed(self, base_lr, step):
        decay_steps = float(self.steps)
        t = min(float(step), decay_steps)
        linear = (decay_steps - t) / decay_steps
        cosine = 0.5 * (1.0 + math.cos(math.pi * 2.0 * self.num_periods * t / decay_steps))
        return base_lr * ((self.alpha + linear) * cosine + self.beta)


class _RatioDecayScheduler(LrScheduler):
    """Shared state of the exponential / inverse-time / natural-exp schedules: p = step/steps (floored if
    `staircase`)."""

    def __init__(self, base_lr, steps, decay_rate, staircase=False, warmup=None):
        super().__init__(base_lr=base_lr, warmup=warmup)
        self.steps = steps
        self.decay_rate = decay_rate
        self.staircase = staircase

    def _ratio(self, step):
        p = float(step) / float(self.steps)
        return math.floor(p) if self.staircase else p


class ExponentialScheduler(_RatioDecayScheduler):
    def _decayed(self, base_lr, step):
        return base_lr * math.pow(self.decay_rate, self._ratio(step))


class InverseTimeScheduler(_RatioDecayScheduler):
    def _decayed(self, base_lr, step):
        return base_lr / (1.0 + self.decay_rate * self._ratio(step))


class NaturalExpScheduler(_RatioDecayScheduler):
    def _decayed(self, base_lr, step):
        return base_lr * math.exp(-self.decay_rate * self._ratio(step))


class CustomScheduler(LrScheduler):
    """The learning rate is the value of blob `lbn` at run time (read by the framework core, not here)."""

    def __init__(self, lbn):
        super().__init__(lr_lbn=lbn)

    @property
    def lbn(self):
        return self.lr_lbn

    def lr_at(self, step):
        raise RuntimeError("CustomScheduler has no formula: its learning rate is the run-time value of blob '%s'"
                           % self.lr_lbn)
