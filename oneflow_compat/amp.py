"""`flow.amp` (OneFlow 0.9's `python/oneflow/amp/grad_scaler.py`): the loss scalers an `nn.Graph` takes with
`set_grad_scaler`. `GradScaler` is the dynamic loss scale of the graph's train step (OneFlow's
dynamic_loss_scale_policy: the loss gradient seeded with the scale, the gradients divided by it again; a step
whose gradients hold inf or nan is skipped and divides the scale by `growth_factor`, never below 1;
`growth_interval` finite steps in a row multiply it by `growth_factor`); `StaticGradScaler` a constant scale. Both
run through the legacy loss-scale policies (`optimizer/loss_scale.py`), which the optimizer pass applies.
`autocast` is `_global/autocast_mode.py`'s."""
from oneflow_compat._global.autocast_mode import autocast, autocast_decorator  # noqa: F401
from oneflow_compat.optimizer.loss_scale import DynamicLossScalePolicy, StaticLossScalePolicy

__all__ = ["GradScaler", "StaticGradScaler", "autocast", "autocast_decorator"]


class GradScaler:
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self._init_scale = init_scale
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        if self._backoff_factor != 1.0 / self._growth_factor:
            raise ValueError("Only support 1.0/growth_factor as backoff_factor at the moment, got {}"
                             .format(backoff_factor))
        self._growth_interval = growth_interval

    def _policy(self):
        return DynamicLossScalePolicy(initial_loss_scale=self._init_scale, increment_period=self._growth_interval,
                                      multiplier=self._growth_factor)


class StaticGradScaler:
    def __init__(self, scale_factor):
        if scale_factor <= 0.0:
            raise ValueError("StaticGradScaler's scale_factor must > 0.0")
        self._scale_factor = scale_factor

    def _policy(self):
        return StaticLossScalePolicy(self._scale_factor)
