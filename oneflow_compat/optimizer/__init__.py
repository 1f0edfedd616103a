"""`flow.optimizer.*`: optimizers, learning-rate schedules, warmup, clipping and loss scaling."""
from oneflow_compat.optimizer import grad_clipping, legacy_conf, loss_scale, warmup  # noqa: F401
from oneflow_compat.optimizer.lr_scheduler import (  # noqa: F401
    CosineScheduler, CustomScheduler, ExponentialScheduler, InverseTimeScheduler, LinearCosineScheduler,
    NaturalExpScheduler, PiecewiseConstantScheduler, PiecewiseScalingScheduler, PolynomialSchduler,
    PolynomialScheduler)
from oneflow_compat.optimizer.optimizers import (  # noqa: F401
    LAMB, LARS, SGD, SGDW, Adam, AdamW, CombinedOptimizer, LazyAdam, Optimizer, RMSProp)
