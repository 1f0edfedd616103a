"""`flow.optimizer.loss_scale.static_loss_scale` / `dynamic_loss_scale` (legacy-api.md §2.12, §2.13).

The loss gradient is seeded with the loss scale and every variable gradient is divided by it again before
regularization/clipping/update. With the dynamic policy the scale adapts: a step whose gradients contain
inf/nan is skipped and halves the scale (never below 1); `increment_period` consecutive finite steps double it
(never above float32 max). The scale is a float32, as in OneFlow's `dynamic_loss_scale_schedule` kernel.
"""
import numpy as np

_FLOAT32_MAX = float(np.finfo(np.float32).max)


class LossScalePolicy:
    """Base of the loss-scale policies. `dynamic`: the scale is a variable that `next_state` moves each step."""

    dynamic = False


class StaticLossScalePolicy(LossScalePolicy):
    def __init__(self, loss_scale_factor):
        self.loss_scale_factor = loss_scale_factor

    def __repr__(self):
        return "loss_scale.static_loss_scale(%r)" % (self.loss_scale_factor,)


class DynamicLossScalePolicy(LossScalePolicy):
    dynamic = True

    def __init__(self, initial_loss_scale=2 ** 30, increment_period=2000, multiplier=2.0):
        self.initial_loss_scale = initial_loss_scale
        self.increment_period = increment_period
        self.multiplier = multiplier

    def initial_state(self):
        """(loss scale, count of consecutive finite steps) before the first step."""
        return float(np.float32(self.initial_loss_scale)), 0

    def next_state(self, scale, good_steps, grads_all_finite):
        """(new scale, new good-step count, whether this step's update is applied) after one step."""
        multiplier = float(np.float32(self.multiplier))
        if not grads_all_finite:
            return float(np.float32(max(float(scale) / multiplier, 1.0))), 0, False
        good_steps = int(good_steps) + 1
        if good_steps >= self.increment_period:
            return float(np.float32(min(float(scale) * multiplier, _FLOAT32_MAX))), 0, True
        return float(scale), good_steps, True

    def __repr__(self):
        return "loss_scale.dynamic_loss_scale(initial_loss_scale=%r, increment_period=%r, multiplier=%r)" % (
            self.initial_loss_scale, self.increment_period, self.multiplier)


# The legacy exported names are the classes themselves (`@oneflow_export("optimizer.loss_scale.…")` on classes).
static_loss_scale = StaticLossScalePolicy
dynamic_loss_scale = DynamicLossScalePolicy
