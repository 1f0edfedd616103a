"""`flow.optim.lr_scheduler`: learning-rate schedules over an optimizer's param groups (OneFlow 0.8–0.9 names).

A scheduler remembers each group's starting rate as `initial_lr`, and `step()` writes `lr` of every group from
(its base rate, the scheduler's step count). Construction performs the first `step()`, so the rate of step 0 is in
place before training starts (as OneFlow and PyTorch do).
"""
import math

from oneflow_compat.optim.optimizer import Optimizer


class LRScheduler:
    def __init__(self, optimizer, last_step=-1, verbose=False):
        if not isinstance(optimizer, Optimizer):
            raise TypeError("%s is not an Optimizer object" % type(optimizer).__name__)
        self.optimizer = optimizer
        if last_step == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError("param 'initial_lr' is not specified in param_groups[%d] when resuming an "
                                   "optimizer" % i)
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_step = last_step
        self.verbose = verbose
        self._last_lr = []
        self.step()

    def get_lr(self, base_lr, step):
        """The rate of a group whose base rate is `base_lr` at scheduler step `step`."""
        raise NotImplementedError

    def get_last_lr(self):
        return list(self._last_lr)

    def step(self):
        self.last_step += 1
        self._last_lr = [self.get_lr(base, self.last_step) for base in self.base_lrs]
        for i, (group, lr) in enumerate(zip(self.optimizer.param_groups, self._last_lr)):
            group["lr"] = lr
            if self.verbose:
                print("Last step %d of lr_scheduler %s, adjusting learning rate of param_groups[%d] to %s"
                      % (self.last_step, type(self).__name__, i, lr))

    def state_dict(self):
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


_LRScheduler = LRScheduler  # the base class's older name (subclassed by user schedulers)


class StepLR(LRScheduler):
    """`lr = base · gamma^⌊step / step_size⌋`."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_step=-1, verbose=False):
        if int(step_size) <= 0:
            raise ValueError("step_size must be greater than zero, but got %r" % (step_size,))
        self.step_size, self.gamma = int(step_size), float(gamma)
        super().__init__(optimizer, last_step, verbose)

    def get_lr(self, base_lr, step):
        return base_lr * self.gamma ** (step // self.step_size)


class MultiStepLR(LRScheduler):
    """`lr = base · gamma^(number of milestones ≤ step)`."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_step=-1, verbose=False):
        self.milestones = sorted(int(m) for m in milestones)
        self.gamma = float(gamma)
        super().__init__(optimizer, last_step, verbose)

    def get_lr(self, base_lr, step):
        return base_lr * self.gamma ** sum(1 for m in self.milestones if m <= step)


class ExponentialLR(LRScheduler):
    """`lr = base · gamma^step`."""

    def __init__(self, optimizer, gamma, last_step=-1, verbose=False):
        self.gamma = float(gamma)
        super().__init__(optimizer, last_step, verbose)

    def get_lr(self, base_lr, step):
        return base_lr * self.gamma ** step


class LambdaLR(LRScheduler):
    """`lr = base · lr_lambda(step)`, one function for every group or one per group."""

    def __init__(self, optimizer, lr_lambda, last_step=-1, verbose=False):
        groups = len(optimizer.param_groups)
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * groups
        if len(lambdas) != groups:
            raise ValueError("Expected %d lr_lambdas, but got %d" % (groups, len(lambdas)))
        self.lr_lambdas = lambdas
        super().__init__(optimizer, last_step, verbose)

    def step(self):
        self.last_step += 1
        self._last_lr = [base * fn(self.last_step) for base, fn in zip(self.base_lrs, self.lr_lambdas)]
        for group, lr in zip(self.optimizer.param_groups, self._last_lr):
            group["lr"] = lr

    def state_dict(self):
        # functions do not travel in a state dict (PyTorch's rule too)
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}


class CosineAnnealingLR(LRScheduler):
    """`lr = eta_min + (base − eta_min)·(1 + cos(π·step / T_max)) / 2` (the closed form of SGDR's annealing)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_step=-1, verbose=False):  # noqa: N803 - OneFlow's name
        if int(T_max) <= 0:
            raise ValueError("T_max must be greater than zero, but got %r" % (T_max,))
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        super().__init__(optimizer, last_step, verbose)

    def get_lr(self, base_lr, step):
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * step / self.T_max)) / 2


class CosineDecayLR(LRScheduler):
    """`lr = base · ((1 − alpha)·(1 + cos(π·min(step, decay_steps) / decay_steps)) / 2 + alpha)`."""

    def __init__(self, optimizer, decay_steps, alpha=0.0, last_step=-1, verbose=False):
        if int(decay_steps) <= 0:
            raise ValueError("decay_steps must be greater than zero, but got %r" % (decay_steps,))
        self.decay_steps, self.alpha = int(decay_steps), float(alpha)
        super().__init__(optimizer, last_step, verbose)

    def get_lr(self, base_lr, step):
        step = min(step, self.decay_steps)
        cos_decay = 0.5 * (1 + math.cos(math.pi * step / self.decay_steps))
        return base_lr * ((1 - self.alpha) * cos_decay + self.alpha)
