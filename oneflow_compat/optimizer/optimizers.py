"""`flow.optimizer.SGD/SGDW/Adam/AdamW/LazyAdam/RMSProp/LARS/LAMB/CombinedOptimizer` (legacy-api.md §1.2, §2.13).

Constructor signatures are OneFlow v0.4.0's (a superset of v0.3.4's). What the framework core uses:

* `minimize(loss)` registers the optimizer and loss(es) with the job being traced.
* `leaf_optimizers()` — `[self]`, or the sub-optimizers of a CombinedOptimizer; each leaf has its own
  `lr_scheduler`, `grad_clipping` and variables, and is driven like an independent optimizer.
* `resolve_variables(job_variable_names)` — the names this (leaf) optimizer updates.
* `state_specs(var_name, shape, np_dtype)` — `[(suffix, initial value)]`; the state variable is named
  `f"{var_name}-{suffix}"` and has shape `state_shape(suffix, shape)` and the variable's dtype.
* `weight_decay_rate(var_name)`; `update(xp, w, g, states, lr=, step=, weight_decay=)` updates in place.
* `lr_scheduler`, `loss_scale_factor`, `loss_scale_policy`, `grad_clipping`, `variables`, `train_step_lbn`.
* `needs_whole_tensor_norms` — the update reads norms of the whole variable (LARS, LAMB): on the pieces of a
  split variable the optimizer pass runs `split_update(xp, w, g, states, *, lr, step, weight_decay)`, a generator
  that yields the arrays whose whole norms it needs and receives them (ops/split_norms.py sums the pieces).
"""
import re

import numpy as np

from oneflow_compat.kernels import cuda_optim
from oneflow_compat.kernels import optim as optim_kernels
from oneflow_compat.optimizer.loss_scale import LossScalePolicy, StaticLossScalePolicy


class Optimizer:
    """Common part: loss scaling, variables and the weight-decay filter."""

    needs_whole_tensor_norms = False

    def __init__(self, loss_scale_factor=None, train_step_lbn=None, loss_scale_policy=None):
        self.train_step_lbn = train_step_lbn
        self.loss_scale_factor = loss_scale_factor
        if loss_scale_factor is not None:
            if loss_scale_policy is not None:
                raise AssertionError()
            self.loss_scale_policy = StaticLossScalePolicy(loss_scale_factor)
        else:
            if loss_scale_policy is not None and not isinstance(loss_scale_policy, LossScalePolicy):
                raise TypeError("loss_scale_policy must come from flow.optimizer.loss_scale, got %r"
                                % (loss_scale_policy,))
            self.loss_scale_policy = loss_scale_policy
        self.lr_scheduler = None
        self.grad_clipping = None
        self.variables = None
        self.weight_decay = None
        self.weight_decay_includes = None
        self.weight_decay_excludes = None

    # -- protocol used by the framework core --------------------------------------------------------------------

    def minimize(self, loss):
        from oneflow_compat.framework.session import register_minimize
        from oneflow_compat.ir import time_shape

        for x in (loss if isinstance(loss, (list, tuple)) else [loss]):
            if time_shape.is_timed(x):
                raise ValueError("minimize(): the loss has a time shape (after flow.unpack / flow.repeat); acc or "
                                 "pack it into one blob first")
        register_minimize(self, loss)

    def leaf_optimizers(self):
        return [self]

    def update_scaled(self, xp, w, g, states, *, lr, step, weight_decay, grad_scale=1.0, grad_owned=False):
        """`update` with the gradient first multiplied by `grad_scale` (the static 1/N loss-instance, gradient
        accumulation and loss-scale factors, folded here by the framework). `grad_owned`: `g` is a temporary
        nobody else reads, so it may be scaled in place instead of copied."""
        if grad_scale != 1.0:
            scale = g.dtype.type(grad_scale)
            if grad_owned:
                g *= scale
            else:
                g = g * scale
        self.update(xp, w, g, states, lr=lr, step=step, weight_decay=weight_decay)

    def resolve_variables(self, job_variable_names):
        """`variables` as a list: None (the default) means every variable of the job, a callable is called."""
        if self.variables is None:
            return list(job_variable_names)
        if callable(self.variables):
            return list(self.variables())
        return list(self.variables)

    def state_specs(self, var_name, shape, np_dtype):
        return []

    def state_shape(self, suffix, var_shape):
        return tuple(var_shape)

    def weight_decay_rate(self, var_name):
        """The decay rate for `var_name`: the optimizer's `weight_decay` if the name passes the include/exclude
        regexes (partial match, like RE2::PartialMatch), else 0."""
        if self.weight_decay is None:
            return 0.0
        if self.weight_decay_includes is not None:
            matched = any(re.search(p, var_name) for p in self.weight_decay_includes)
            return float(self.weight_decay) if matched else 0.0
        if self.weight_decay_excludes is not None:
            matched = any(re.search(p, var_name) for p in self.weight_decay_excludes)
            return 0.0 if matched else float(self.weight_decay)
        return float(self.weight_decay)

    def update(self, xp, w, g, states, *, lr, step, weight_decay):
        raise NotImplementedError

    # -- on a device: one CUDA launch per update, the rate read from device memory (kernels/cuda_optim.py) --------
    def device_rate(self, lr, step):
        """The float32 rate the device update reads for learning rate `lr` at `step` (a step scalar, uploaded every
        call), or None where this optimizer has no device update (its array update runs, with host scalars)."""
        return None

    def update_on_device(self, xp, w, g, states, rate, *, weight_decay, grad_scale=1.0, grad_owned=False):
        """The update of `update_scaled` as one launch reading `rate` (a float32 device scalar holding
        `device_rate`); False where the arrays do not fit the device kernels (the caller runs the array update)."""
        return False

    # -- helpers ----------------------------------------------------------------------------------------------

    def _set_common(self, lr_scheduler, grad_clipping, variables):
        self.lr_scheduler = lr_scheduler
        self.grad_clipping = grad_clipping
        if variables is not None and not callable(variables):
            variables = list(variables)
        self.variables = variables

    def set_weight_decay(self, weight_decay, includes, excludes):
        if isinstance(includes, str):
            includes = [includes]
        if isinstance(excludes, str):
            excludes = [excludes]
        if weight_decay is not None:
            if not (not (excludes is not None and includes is not None)):
                raise AssertionError()
        self.weight_decay = weight_decay
        self.weight_decay_includes = None if includes is None else list(includes)
        self.weight_decay_excludes = None if excludes is None else list(excludes)

    def __repr__(self):
        shown = {k: v for k, v in vars(self).items() if v is not None}
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%r" % kv for kv in shown.items()))


class _MomentumSGD(Optimizer):
    """SGD and SGDW: plain SGD when `momentum == 0` (no state), else TF-style momentum with `-momentum` state."""

    indexed_slices_update = True  # OneFlow rewrites sgd/momentum updates of gathered variables (issue 20)

    def state_specs(self, var_name, shape, np_dtype):
        return [] if self.momentum == 0 else [("momentum", 0.0)]

    def linear_update_momentum(self):
        """Protocol: the update without weight decay is w ← w − c·g (0 returned) or m ← β·m − c·g, w ← w + m (β
        returned), c = lr·grad_scale: linear in g, so the framework may add the gradient's own GEMM straight into
        w or m (passes/fusion.py). Optimizers without this method are never fused. β as the update
        uses it: rounded to float32 (OneFlow's float attribute, `momentum_update`'s β), so that a fused step (one
        device) and an unfused one (several devices) give the same numbers."""
        return float(np.float32(self.momentum)) if self.momentum else self.momentum

    def update_scaled(self, xp, w, g, states, *, lr, step, weight_decay, grad_scale=1.0, grad_owned=False):
        if not grad_owned or weight_decay != 0:
            return super().update_scaled(xp, w, g, states, lr=lr, step=step, weight_decay=weight_decay,
                                         grad_scale=grad_scale, grad_owned=grad_owned)
        # fused: one pass scales the owned gradient by lr·scale, one applies it (no temporaries)
        g *= g.dtype.type(np.float32(lr) * np.float32(grad_scale))
        if self.momentum == 0:
            w -= g
        else:
            m = states[0]
            m *= m.dtype.type(np.float32(self.momentum))  # β a float attribute, as momentum_update rounds it
            m -= g
            w += m

    def device_rate(self, lr, step):
        return np.float32(lr)

    def update_on_device(self, xp, w, g, states, rate, *, weight_decay, grad_scale=1.0, grad_owned=False):
        if not cuda_optim.supported(w, g, *states):
            return False
        # update_scaled's fused branch where it takes it (an owned gradient, no weight decay), else update's
        fused = grad_owned and weight_decay == 0
        if self.momentum == 0:
            cuda_optim.sgd(xp, w, g, rate, scale=grad_scale, weight_decay=weight_decay, fused=fused)
        else:
            cuda_optim.momentum(xp, w, states[0], g, rate, beta=self.momentum, scale=grad_scale,
                                weight_decay=weight_decay, fused=fused)
        return True

    def update(self, xp, w, g, states, *, lr, step, weight_decay):
        if self.momentum == 0:
            optim_kernels.sgd_update(xp, w, g, lr=lr, weight_decay=weight_decay)
        else:
            optim_kernels.momentum_update(xp, w, states[0], g, lr=lr, beta=self.momentum,
                                          weight_decay=weight_decay)


class SGD(_MomentumSGD):
    def __init__(self, lr_scheduler, loss_scale_factor=None, momentum=0.9, grad_clipping=None,
                 train_step_lbn=None, loss_scale_policy=None, variables=None):
        super().__init__(loss_scale_factor, train_step_lbn, loss_scale_policy)
        self._set_common(lr_scheduler, grad_clipping, variables)
        self.momentum = momentum


class SGDW(_MomentumSGD):
    def __init__(self, lr_scheduler, loss_scale_factor=None, momentum=0.9, weight_decay=None,
                 weight_decay_includes=None, weight_decay_excludes=None, grad_clipping=None, train_step_lbn=None,
                 loss_scale_policy=None, variables=None):
        super().__init__(loss_scale_factor, train_step_lbn, loss_scale_policy)
        self._set_common(lr_scheduler, grad_clipping, variables)
        self.momentum = momentum
        self.set_weight_decay(weight_decay, weight_decay_includes, weight_decay_excludes)


def _adam_on_device(opt, xp, w, g, states, rate, weight_decay, grad_scale):
    if not cuda_optim.supported(w, g, *states):
        return False
    cuda_optim.adam(xp, w, states[0], states[1], g, rate, beta1=opt.beta1, beta2=opt.beta2, epsilon=opt.epsilon,
                    scale=grad_scale, weight_decay=weight_decay)
    return True


class _AdamFamily(Optimizer):
    indexed_slices_update = True  # and adam updates (with or without weight decay)

    def state_specs(self, var_name, shape, np_dtype):
        return [("m", 0.0), ("v", 0.0)]

    def update(self, xp, w, g, states, *, lr, step, weight_decay):
        m, v = states
        optim_kernels.adam_update(xp, w, m, v, g, lr=lr, beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                                  weight_decay=weight_decay, do_bias_correction=self.do_bias_correction,
                                  step=step)

    def device_rate(self, lr, step):
        if self.do_bias_correction:
            return optim_kernels.adam_bias_corrected_lr(lr, self.beta1, self.beta2, step)
        return np.float32(lr)

    def update_on_device(self, xp, w, g, states, rate, *, weight_decay, grad_scale=1.0, grad_owned=False):
        return _adam_on_device(self, xp, w, g, states, rate, weight_decay, grad_scale)


class Adam(_AdamFamily):
    def __init__(self, lr_scheduler, beta1=0.9, beta2=0.999, epsilon=1e-8, do_bias_correction=False,
                 loss_scale_factor=None, grad_clipping=None, train_step_lbn=None, loss_scale_policy=None,
                 variables=None):
        super().__init__(loss_scale_factor, train_step_lbn, loss_scale_policy)
        self._set_common(lr_scheduler, grad_clipping, variables)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.do_bias_correction = do_bias_correction


class AdamW(_AdamFamily):
    def __init__(self, lr_scheduler, beta1=0.9, beta2=0.999, epsilon=1e-8, do_bias_correction=False,
                 loss_scale_factor=None, weight_decay=None, weight_decay_includes=None, weight_decay_excludes=None,
                 grad_clipping=None, train_step_lbn=None, loss_scale_policy=None, variables=None):
        super().__init__(loss_scale_factor, train_step_lbn, loss_scale_policy)
        self._set_common(lr_scheduler, grad_clipping, variables)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.do_bias_correction = do_bias_correction
        self.set_weight_decay(weight_decay, weight_decay_includes, weight_decay_excludes)


class LazyAdam(Optimizer):
    def __init__(self, lr_scheduler, beta1=0.9, beta2=0.999, epsilon=1e-8, loss_scale_factor=None,
                 grad_clipping=None, train_step_lbn=None, loss_scale_policy=None, variables=None):
        super().__init__(loss_scale_factor, train_step_lbn, loss_scale_policy)
        self._set_common(lr_scheduler, grad_clipping, variables)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def state_specs(self, var_name, shape, np_dtype):
        return [("m", 0.0), ("v", 0.0)]

    def device_rate(self, lr, step):
        return optim_kernels.adam_bias_corrected_lr(lr, self.beta1, self.beta2, step)

    def update_on_device(self, xp, w, g, states, rate, *, weight_decay, grad_scale=1.0, grad_owned=False):
        return _adam_on_device(self, xp, w, g, states, rate, 0.0, grad_scale)  # lazy_adam_update: no decay

    def update(self, xp, w, g, states, *, lr, step, weight_decay):
        m, v = states
        optim_kernels.lazy_adam_update(xp, w, m, v, g, lr=lr, beta1=self.beta1, beta2=self.beta2,
                                       epsilon=self.epsilon, step=step)


class RMSProp(Optimizer):
    def __init__(self, lr_scheduler, decay_rate=0.99, epsilon=1e-8, centered=False, loss_scale_factor=None,
                 grad_clipping=None, train_step_lbn=None, loss_scale_policy=None, variables=None):
        super().__init__(loss_scale_factor, train_step_lbn, loss_scale_policy)
        self._set_common(lr_scheduler, grad_clipping, variables)
        self.decay_rate = decay_rate
        self.epsilon = epsilon
        self.centered = centered

    def state_specs(self, var_name, shape, np_dtype):
        specs = [("mean_square", 0.0)]
        if self.centered:
            specs.append(("mean_gradient", 0.0))
        return specs

    def update(self, xp, w, g, states, *, lr, step, weight_decay):
        # OneFlow's RMSProp functor receives the weight decay but never applies it.
        if self.centered:
            optim_kernels.rmsprop_centered_update(xp, w, states[0], states[1], g, lr=lr, decay_rate=self.decay_rate,
                                                  epsilon=self.epsilon)
        else:
            optim_kernels.rmsprop_update(xp, w, states[0], g, lr=lr, decay_rate=self.decay_rate,
                                         epsilon=self.epsilon)


class LARS(Optimizer):
    needs_whole_tensor_norms = True

    def __init__(self, lr_scheduler, momentum_beta=0.9, epsilon=1e-9, lars_coefficient=0.0001,
                 loss_scale_factor=None, weight_decay=None, weight_decay_includes=None, weight_decay_excludes=None,
                 grad_clipping=None, train_step_lbn=None, loss_scale_policy=None, variables=None):
        super().__init__(loss_scale_factor, train_step_lbn, loss_scale_policy)
        self._set_common(lr_scheduler, grad_clipping, variables)
        self.momentum_beta = momentum_beta
        self.epsilon = epsilon
        self.lars_coefficient = lars_coefficient
        self.set_weight_decay(weight_decay, weight_decay_includes, weight_decay_excludes)

    def state_specs(self, var_name, shape, np_dtype):
        return [("momentum", 0.0)]

    def update(self, xp, w, g, states, *, lr, step, weight_decay):
        optim_kernels.lars_update(xp, w, states[0], g, lr=lr, momentum_beta=self.momentum_beta,
                                  epsilon=self.epsilon, lars_coefficient=self.lars_coefficient,
                                  weight_decay=weight_decay)

    def split_update(self, xp, w, g, states, *, lr, step, weight_decay):
        norms = yield optim_kernels.lars_norm_terms(xp, w, g)
        optim_kernels.lars_update(xp, w, states[0], g, lr=lr, momentum_beta=self.momentum_beta,
                                  epsilon=self.epsilon, lars_coefficient=self.lars_coefficient,
                                  weight_decay=weight_decay, norms=norms)


class LAMB(Optimizer):
    needs_whole_tensor_norms = True
    _SCALAR_STATES = ("beta1_t", "beta2_t")

    def __init__(self, lr_scheduler, beta1=0.9, beta2=0.999, epsilon=1e-6, loss_scale_factor=None,
                 weight_decay=None, weight_decay_includes=None, weight_decay_excludes=None, grad_clipping=None,
                 train_step_lbn=None, loss_scale_policy=None, variables=None):
        super().__init__(loss_scale_factor, train_step_lbn, loss_scale_policy)
        self._set_common(lr_scheduler, grad_clipping, variables)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.set_weight_decay(weight_decay, weight_decay_includes, weight_decay_excludes)

    def state_specs(self, var_name, shape, np_dtype):
        return [("m", 0.0), ("v", 0.0), ("beta1_t", self.beta1), ("beta2_t", self.beta2)]

    def state_shape(self, suffix, var_shape):
        # OneFlow's LAMB helper variables beta1_t/beta2_t are scalars of shape (1,), broadcast on every device.
        return (1,) if suffix in self._SCALAR_STATES else tuple(var_shape)

    def update(self, xp, w, g, states, *, lr, step, weight_decay):
        m, v, beta1_t, beta2_t = states
        optim_kernels.lamb_update(xp, w, m, v, beta1_t, beta2_t, g, lr=lr, beta1=self.beta1, beta2=self.beta2,
                                  epsilon=self.epsilon, weight_decay=weight_decay)

    def split_update(self, xp, w, g, states, *, lr, step, weight_decay):
        m, v, beta1_t, beta2_t = states
        direction = optim_kernels.lamb_direction(xp, m, v, beta1_t, beta2_t, g, beta1=self.beta1, beta2=self.beta2,
                                                 epsilon=self.epsilon)
        norms = yield [w, direction]
        optim_kernels.lamb_apply(xp, w, direction, norms, lr=lr, weight_decay=weight_decay)


class CombinedOptimizer(Optimizer):
    """Several optimizers over disjoint variable lists in one job (v0.4.0). Loss scaling and the train-step
    counter belong to the combination; each sub-optimizer keeps its own scheduler, clipping and variables."""

    def __init__(self, optimizers, loss_scale_factor=None, train_step_lbn=None, loss_scale_policy=None):
        super().__init__(loss_scale_factor, train_step_lbn, loss_scale_policy)
        self.optimizers = list(optimizers)
        if len(self.optimizers) < 2:
            raise AssertionError("Combined optimizer should only be used in multi-optimizer case, otherwise you "
                                 "should consider other optimizer interface")
        for optimizer in self.optimizers:
            if optimizer.train_step_lbn is not None:
                raise AssertionError("Only one train step lbn among multi optimizers")
            if optimizer.loss_scale_policy is not None:
                raise AssertionError("Only one loss scale policy among multi optimizers")

    def leaf_optimizers(self):
        return list(self.optimizers)

    def resolve_variables(self, job_variable_names):
        """All variables of the sub-optimizers; raises if one variable belongs to two of them."""
        owner = {}
        for index, optimizer in enumerate(self.optimizers):
            for name in optimizer.resolve_variables(job_variable_names):
                if name in owner:
                    raise AssertionError("variable '%s' is in sub-optimizers %d and %d of a CombinedOptimizer"
                                         % (name, owner[name], index))
                owner[name] = index
        return list(owner)

    def _delegate(self, *args, **kwargs):
        raise TypeError("CombinedOptimizer has no per-variable rule of its own: drive each of leaf_optimizers()")

    state_specs = state_shape = weight_decay_rate = update = _delegate

