"""`flow.optimizer.warmup.constant/linear` (legacy-api.md §2.13).

While `step < steps` the scheduled learning rate is replaced by `base·multiplier` (constant) or
`base·(start + (1-start)·step/steps)` (linear); from `steps` on the scheduler's decay applies at the raw step.
The range checks are those OneFlow's learning-rate kernel made (`CHECK_GT/LT`), done here at construction.
"""


class WarmupConf:
    """Base of the warmup strategies: `steps` and `lr(base_lr, step)` for `step < steps`."""

    steps = 0

    def active(self, step):
        return step < self.steps

    def lr(self, base_lr, step):
        raise NotImplementedError


class constant(WarmupConf):  # noqa: N801 - legacy class name
    def __init__(self, steps, multiplier):
        if not (steps >= 0):
            raise AssertionError("warmup steps must be >= 0, got %r" % (steps,))
        if not (0 < multiplier < 1):
            raise AssertionError("constant warmup multiplier must be in (0, 1), got %r" % (multiplier,))
        self.steps = steps
        self.multiplier = multiplier

    def lr(self, base_lr, step):
        return base_lr * self.multiplier

    def __repr__(self):
        return "warmup.constant(steps=%r, multiplier=%r)" % (self.steps, self.multiplier)


class linear(WarmupConf):  # noqa: N801 - legacy class name
    def __init__(self, steps, start_multiplier):
        if not (steps >= 0):
            raise AssertionError("warmup steps must be >= 0, got %r" % (steps,))
        if not (0 <= start_multiplier < 1):
            raise AssertionError("linear warmup start_multiplier must be in [0, 1), got %r" % (start_multiplier,))
        self.steps = steps
        self.start_multiplier = start_multiplier

    def lr(self, base_lr, step):
        start = float(self.start_multiplier)
        return base_lr * (start + (1.0 - start) * (step * 1.0 / self.steps))

    def __repr__(self):
        return "warmup.linear(steps=%r, start_multiplier=%r)" % (self.steps, self.start_multiplier)
