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
        self.last_step = last_step
        self.verbose = verbose
        self._last_lr = []
        self._init_base_lrs()
        self.step()

    def _init_base_lrs(self):
        if self.last_step == -1:
            for group in self.optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(self.optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError("param 'initial_lr' is not specified in param_groups[%d] when resuming an "
                                   "optimizer" % i)
        self.base_lrs = [group["initial_lr"] for group in self.optimizer.param_groups]

    def get_lr(self, base_lr, step):
        """The rate of a group whose base rate is `base_lr` at scheduler step `step`."""
        raise NotImplementedError

    def get_last_lr(self):
        return list(self._last_lr)

    def step(self):
        self.last_step += 1
        self.update_lrs([self.get_lr(base, self.last_step) for base in self.base_lrs])

    def update_lrs(self, lrs):
        """Writes `lrs` (one per group) into the optimizer's groups."""
        self._last_lr = list(lrs)
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
        self.update_lrs([base * fn(self.last_step) for base, fn in zip(self.base_lrs, self.lr_lambdas)])

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


# --- OneFlow 0.9's other schedulers (issue 21): python/oneflow/nn/optimizer/<name>.py@v0.9.0 -------------------------
class ConstantLR(LRScheduler):
    """`lr = base · factor` for the first `total_iters` steps, then `base` (constant_lr.py@v0.9.0)."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_step=-1, verbose=False):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_step, verbose)

    def get_lr(self, base_lr, step):
        return base_lr * self.factor if step < self.total_iters else base_lr


class LinearLR(LRScheduler):
    """`lr = base · (start + (end − start)·step/total_iters)` up to `total_iters`, then `base · end`
    (linear_lr.py@v0.9.0)."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_step=-1, verbose=False):
        if start_factor > 1.0 or start_factor < 0:
            raise ValueError("Starting multiplicative factor expected to be between 0 and 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_step, verbose)

    def get_lr(self, base_lr, step):
        if step < self.total_iters:
            return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * (step / self.total_iters))
        return base_lr * self.end_factor


class PolynomialLR(LRScheduler):
    """`lr = (base − end)·(1 − step/decay_batch)^power + end`, the step capped at `decay_batch`; with `cycle` the
    horizon grows to the next multiple of `decay_batch` instead (polynomial_lr.py@v0.9.0)."""

    def __init__(self, optimizer, decay_batch, end_learning_rate=0.0001, power=1.0, cycle=False, last_step=-1,
                 verbose=False):
        if not decay_batch > 0:
            raise ValueError("decay_batch must greater than zero, but got %r" % (decay_batch,))
        self.max_decay_steps, self.end_learning_rate = decay_batch, end_learning_rate
        self.power, self.cycle = power, cycle
        super().__init__(optimizer, last_step, verbose)

    def get_lr(self, base_lr, step):
        decay_batch, cur = self.max_decay_steps, step
        if self.cycle:
            cur = max(cur, 1)
            decay_batch = decay_batch * math.ceil(cur / decay_batch)
        else:
            cur = min(cur, decay_batch)
        factor = (1 - cur / decay_batch) ** self.power
        return (base_lr - self.end_learning_rate) * factor + self.end_learning_rate


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: cosine annealing from `base · decay_rate^cycle` to `eta_min` over cycles of T_0, T_0·T_mult, …
    steps; after `restart_limit` cycles (0: no limit) the rate stays at `eta_min`
    (cosine_annealing_warm_restarts.py@v0.9.0)."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, decay_rate=1.0, restart_limit=0,  # noqa: N803
                 last_step=-1, verbose=False):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError("Expected positive integer T_0, but got %s" % (T_0,))
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError("Expected integer T_mult >= 1, but got %s" % (T_mult,))
        self.T_0, self.T_mult, self.eta_min = T_0, T_mult, eta_min
        self.decay_rate, self.restart_limit = decay_rate, restart_limit
        super().__init__(optimizer, last_step, verbose)

    def get_lr(self, base_lr, step):
        if self.T_mult > 1:
            cycle = math.floor(math.log(1 - step / self.T_0 * (1 - self.T_mult), self.T_mult))
            cycle_steps = self.T_mult ** cycle * self.T_0
            step_in_cycle = step - (1 - self.T_mult ** cycle) / (1 - self.T_mult) * self.T_0
        else:
            cycle = step // self.T_0
            cycle_steps = self.T_0
            step_in_cycle = step - cycle_steps * cycle
        if self.restart_limit == 0 or cycle < self.restart_limit:
            cos_decay = 0.5 * (1 + math.cos(math.pi * step_in_cycle / cycle_steps))
            return self.eta_min + (base_lr * self.decay_rate ** cycle - self.eta_min) * cos_decay
        return self.eta_min


class _ComposedScheduler(LRScheduler):
    """State dicts of schedulers made of schedulers: their own entries plus each part's state dict."""

    def state_dict(self):
        out = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "schedulers")}
        out["schedulers"] = [s.state_dict() for s in self.schedulers]
        return out

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        parts = state_dict.pop("schedulers")
        self.__dict__.update(state_dict)
        for scheduler, part in zip(self.schedulers, parts):
            scheduler.load_state_dict(part)


class SequentialLR(_ComposedScheduler):
    """`schedulers[i]` rules from `milestones[i-1]` on; with `interval_rescaling[i-1]` it counts its steps from
    that milestone, otherwise from 0 (sequential_lr.py@v0.9.0)."""

    def __init__(self, optimizer, schedulers, milestones, interval_rescaling=False, last_step=-1, verbose=False):
        if not isinstance(optimizer, Optimizer):
            raise TypeError("%s is not an Optimizer object" % type(optimizer).__name__)
        if not isinstance(schedulers, (list, tuple)) or not isinstance(milestones, (list, tuple)):
            raise TypeError("SequentialLR expects a list of schedulers and a list of milestones")
        if len(schedulers) == 0:
            raise ValueError("Sequential Schedulers expects at least one scheduler")
        for i, scheduler in enumerate(schedulers):
            if scheduler.optimizer is not optimizer:
                raise ValueError("Sequential Schedulers expects all schedulers to belong to the same optimizer, but "
                                 "got schedulers at index %d to be different than the optimizer passed in." % i)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             "number of milestone points, but got number of schedulers %d and the number of "
                             "milestones to be equal to %d" % (len(schedulers), len(milestones)))
        if isinstance(interval_rescaling, (list, tuple)):
            if len(interval_rescaling) != len(milestones):
                raise ValueError("'interval_rescaling' expects a bool or a list of bool with length be equal to the "
                                 "number of milestones, but got number of milestones %d and the length of list of "
                                 "interval_rescaling %d" % (len(milestones), len(interval_rescaling)))
            interval_rescaling = [bool(r) for r in interval_rescaling]
        else:
            interval_rescaling = [bool(interval_rescaling)] * len(milestones)
        self.schedulers = list(schedulers)
        self.milestones = list(milestones)
        self.interval_rescaling = interval_rescaling
        super().__init__(optimizer, last_step, verbose)

    def step(self):
        import bisect

        self.last_step += 1
        cur = self.last_step
        i = bisect.bisect_right(self.milestones, cur)
        if i > 0 and self.interval_rescaling[i - 1]:
            cur = self.last_step - self.milestones[i - 1]
        scheduler = self.schedulers[i]
        scheduler.last_step = cur
        self.update_lrs([scheduler.get_lr(base, cur) for base in self.base_lrs])


class WarmupLR(SequentialLR):
    """A warm-up before `scheduler_or_optimizer` (a scheduler, or an optimizer for a warm-up alone): for
    `warmup_iters` steps the rate is `base · warmup_factor` ("constant") or rises linearly from it ("linear") to
    where the scheduler is at `warmup_iters` (to `base` with `warmup_prefix`, after which the scheduler counts its
    steps from the end of the warm-up) (warmup_lr.py@v0.9.0)."""

    def __init__(self, scheduler_or_optimizer, warmup_factor=1.0 / 3, warmup_iters=5, warmup_method="linear",
                 warmup_prefix=False, last_step=-1, verbose=False):
        if not isinstance(scheduler_or_optimizer, (LRScheduler, Optimizer)):
            raise ValueError("'scheduler_or_optimizer' must be a LRScheduler or an Optimizer, but got %s"
                             % type(scheduler_or_optimizer))
        if warmup_method not in ("linear", "constant"):
            raise ValueError("'warmup_method' must be 'linear' or 'constant', but got %s" % (warmup_method,))
        if isinstance(scheduler_or_optimizer, LRScheduler):
            opt, scheduler = scheduler_or_optimizer.optimizer, scheduler_or_optimizer
        else:
            opt, scheduler = scheduler_or_optimizer, None
        if scheduler is None and warmup_iters == 0:
            raise ValueError("When 'scheduler_or_optimizer' is an optimizer warmup_iters can't be equal to 0")
        self.warmup_factor, self.warmup_iters = warmup_factor, warmup_iters
        self.warmup_method, self.warmup_prefix = warmup_method, warmup_prefix
        self.optimizer, self.last_step, self.verbose = opt, last_step, verbose
        self._init_base_lrs()
        warmup = self._warmup_scheduler(scheduler)
        if warmup and scheduler:
            schedulers, milestones, rescaling = [warmup, scheduler], [warmup_iters], [warmup_prefix]
        elif warmup or scheduler:
            schedulers, milestones, rescaling = [warmup or scheduler], [], []
        else:
            raise ValueError("No scheduler can work")
        super().__init__(opt, schedulers=schedulers, milestones=milestones, interval_rescaling=rescaling,
                         last_step=last_step, verbose=verbose)

    def _warmup_scheduler(self, scheduler):
        if self.warmup_iters <= 0:
            return None
        if self.warmup_method == "constant":
            return ConstantLR(self.optimizer, factor=self.warmup_factor, total_iters=self.warmup_iters,
                              last_step=self.last_step, verbose=self.verbose)
        end_factor = 1.0
        if scheduler is not None and not self.warmup_prefix:
            base_lr = self.base_lrs[0]
            if any(not math.isclose(b, base_lr, rel_tol=1e-5, abs_tol=1e-8) for b in self.base_lrs):
                raise ValueError("The param_groups in optimizer have different warmup configs, please use different "
                                 "optimizers.")
            end_factor = scheduler.get_lr(base_lr, self.warmup_iters) / base_lr
        return LinearLR(self.optimizer, start_factor=self.warmup_factor, end_factor=end_factor,
                        total_iters=self.warmup_iters, last_step=self.last_step, verbose=self.verbose)


class ChainedScheduler(_ComposedScheduler):
    """Every scheduler's rule applied in turn, each to the previous one's rate (chained_scheduler.py@v0.9.0)."""

    def __init__(self, schedulers):
        if not isinstance(schedulers, (list, tuple)) or any(not isinstance(s, LRScheduler) for s in schedulers):
            raise ValueError("ChainedScheduler expects a list of schedulers")
        if len(schedulers) == 0:
            raise ValueError("length of list of schedulers must be greater than 0")
        opt = schedulers[0].optimizer
        for i in range(1, len(schedulers)):
            if schedulers[i].optimizer is not opt:
                raise ValueError("ChainedScheduler expects all schedulers to belong to the same optimizer, but got "
                                 "schedulers at index 0 and %d to be different" % i)
        self.schedulers = list(schedulers)
        super().__init__(opt)

    def step(self):
        self.last_step += 1
        lrs = list(self.schedulers[0].base_lrs)
        for scheduler in self.schedulers:
            lrs = [scheduler.get_lr(lr, self.last_step) for lr in lrs]
            scheduler.last_step = self.last_step
        self.update_lrs(lrs)


class ReduceLROnPlateau:
    """Multiplies every group's rate by `factor` (not below `min_lr`) when `step(metric)` has seen no improvement
    for more than `patience` steps, then waits `cooldown` steps (reduce_lr_on_plateau.py@v0.9.0)."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, eps=1e-8, verbose=False):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError("%s is not an Optimizer" % type(optimizer).__name__)
        self.factor, self.optimizer = factor, optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError("expected %d min_lrs, got %d" % (len(optimizer.param_groups), len(min_lr)))
            self.min_lrs = list(min_lr)
        else:
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience, self.verbose, self.cooldown = patience, verbose, cooldown
        self.cooldown_counter = 0
        self.best = self.num_bad_steps = self.mode_worse = None
        self.eps = eps
        self.last_step = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def step(self, metrics):
        current = float(metrics)
        self.last_step += 1
        if self.is_better(current, self.best):
            self.best, self.num_bad_steps = current, 0
        else:
            self.num_bad_steps += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_steps = 0  # bad steps during the cooldown do not count
        if self.num_bad_steps > self.patience:
            self._reduce_lr(self.last_step)
            self.cooldown_counter = self.cooldown
            self.num_bad_steps = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self):
        return list(self._last_lr)

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def is_better(self, a, best):
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)

    def _reduce_lr(self, step):
        for i, group in enumerate(self.optimizer.param_groups):
            old = float(group["lr"])
            new = max(old * self.factor, self.min_lrs[i])
            if old - new > self.eps:
                group["lr"] = new
                if self.verbose:
                    print("Epoch {:5d}: reducing learning rate of group {} to {:.4e}.".format(step, i, new))

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_steps = 0

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode


# api-misc2: OneFlow 0.9 also binds WarmupLR as lr_scheduler.WarmUpLR (optim/lr_scheduler.py v0.9.0), the name
# its docstrings use
WarmUpLR = WarmupLR
