"""`flow.optim.AdamW`, `RMSprop`, `Adagrad`, `Adadelta`, `LAMB`: OneFlow 0.9's signatures, defaults and update
formulas (python/oneflow/nn/optimizer/{adamw,rmsprop,adagrad,adadelta,lamb}.py@v0.9.0 and the functors of
oneflow/user/kernels/model_update_kernel_util.{h,cpp}@v0.9.0). `weight_decay` is an L2 term added to the gradient
(the kernels' `l2`: g ← g + wd·w) except in AdamW and LAMB's `adam_w_mode`, where it is decoupled (the kernels'
`weight_decay`: w ← w − lr·wd·w, from the weight before the step).
"""
import math

from oneflow_compat.optim.elementwise import PieceOptimizer, check_common, scalar, trust_ratio


def _bias_corrections(group, t):
    if not group["do_bias_correction"]:
        return 1.0, 1.0
    beta1, beta2 = group["betas"]
    return 1 - beta1 ** t, 1 - beta2 ** t


def _adam_moments(xp, w, g, m, v, beta1, beta2):
    c = lambda x: scalar(w, x)  # noqa: E731
    m *= c(beta1)
    m += c(1 - beta1) * g
    v *= c(beta2)
    v += c(1 - beta2) * (g * g)


class AdamW(PieceOptimizer):
    """AdamUpdateFunctor@v0.9.0 with l2 = 0: m ← β1·m + (1−β1)·g; v ← β2·v + (1−β2)·g²;
    w ← w − lr/bc1 · m/(√v/√bc2 + ε) − lr·wd·w (√ of max v with `amsgrad`) — PyTorch's AdamW."""

    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0, amsgrad=False,
                 do_bias_correction=True, fused=False):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, do_bias_correction=do_bias_correction, fused=fused))

    def _check_group(self, group):
        check_common(group, betas=True)

    def state_names(self, group):
        return ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())

    def piece_update(self, xp, w, g, states, lr, t, group):
        c = lambda x: scalar(w, x)  # noqa: E731
        beta1, beta2 = group["betas"]
        bc1, bc2 = _bias_corrections(group, t)
        m, v = states[0], states[1]
        _adam_moments(xp, w, g, m, v, beta1, beta2)
        if group["amsgrad"]:
            xp.maximum(states[2], v, out=states[2])
            v = states[2]
        denom = xp.sqrt(v) / c(math.sqrt(bc2)) + c(group["eps"])
        step = c(lr / bc1) * (m / denom) + c(lr * group["weight_decay"]) * w
        w -= step


class RMSprop(PieceOptimizer):
    """RmsPropUpdateFunctor@v0.9.0: g ← g + wd·w; ms ← α·ms + (1−α)·g²; with `centered`, mg ← α·mg + (1−α)·g and
    the denominator is ms − mg²; w ← w − lr·g/√(denominator + ε). ε sits INSIDE the root (PyTorch adds it after the
    root), and momentum is refused (rmsprop.py@v0.9.0: "Not support momentum greater than zeros now!")."""

    def __init__(self, params, lr=0.001, alpha=0.99, eps=1e-08, weight_decay=0, momentum=0.0, centered=False):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered))

    def _check_group(self, group):
        check_common(group)
        if group["alpha"] < 0:
            raise ValueError("Invalid alpha value: %r" % (group["alpha"],))
        if group["momentum"] != 0.0:
            raise ValueError("RMSprop: Not support momentum greater than zeros now! (got momentum=%r)"
                             % (group["momentum"],))

    def state_names(self, group):
        return ("square_avg", "grad_avg") if group["centered"] else ("square_avg",)

    def piece_update(self, xp, w, g, states, lr, t, group):
        c = lambda x: scalar(w, x)  # noqa: E731
        alpha = group["alpha"]
        g = g + c(group["weight_decay"]) * w
        ms = states[0]
        ms *= c(alpha)
        ms += c(1 - alpha) * (g * g)
        denom = ms
        if group["centered"]:
            mg = states[1]
            mg *= c(alpha)
            mg += c(1 - alpha) * g
            denom = ms - mg * mg
        w -= c(lr) * g / xp.sqrt(denom + c(group["eps"]))


class Adagrad(PieceOptimizer):
    """AdagradUpdateFunctor@v0.9.0: lr_t = lr/(1 + (t−1)·lr_decay); g ← g + wd·w; sum ← sum + g²;
    w ← w − lr_t·g/(√sum + ε). `sum` starts at `initial_accumulator_value` (filled when the optimizer is built,
    as adagrad.py@v0.9.0 does)."""

    def __init__(self, params, lr=0.001, lr_decay=0.0, weight_decay=0, initial_accumulator_value=0.0, eps=1e-10):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, eps=eps))
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = {"sum": self.new_state(p, group, "sum")}

    def _check_group(self, group):
        check_common(group)
        if group["initial_accumulator_value"] < 0:
            raise ValueError("Invalid initial_accumulator_value value: %r" % (group["initial_accumulator_value"],))

    def state_names(self, group):
        return ("sum",)

    def state_init(self, group, name):
        return group["initial_accumulator_value"]

    def piece_update(self, xp, w, g, states, lr, t, group):
        c = lambda x: scalar(w, x)  # noqa: E731
        lr_t = lr / (1 + (t - 1) * group["lr_decay"])
        g = g + c(group["weight_decay"]) * w
        s = states[0]
        s += g * g
        w -= c(lr_t) * g / (xp.sqrt(s) + c(group["eps"]))


class Adadelta(PieceOptimizer):
    """AdadeltaUpdateFunctor@v0.9.0: g ← −g with `maximize`, then g ← g + wd·w; sa ← ρ·sa + (1−ρ)·g²;
    δ = √(ad + ε)/√(sa + ε)·g; ad ← ρ·ad + (1−ρ)·δ²; w ← w − lr·δ. adadelta.py@v0.9.0 refuses `maximize=True`
    because its graph added weight decay before the sign flip; here eager and graph run this one formula, so it is
    accepted (it is PyTorch's)."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-06, weight_decay=0, maximize=False):
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize))
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = {n: self.new_state(p, group, n) for n in self.state_names(group)}

    def _check_group(self, group):
        check_common(group)
        if not 0.0 <= group["rho"] <= 1.0:
            raise ValueError("Invalid rho value: %r" % (group["rho"],))

    def state_names(self, group):
        return ("square_avgs", "acc_deltas")

    def piece_update(self, xp, w, g, states, lr, t, group):
        c = lambda x: scalar(w, x)  # noqa: E731
        rho, eps = group["rho"], c(group["eps"])
        if group["maximize"]:
            g = -g
        g = g + c(group["weight_decay"]) * w
        sa, ad = states
        sa *= c(rho)
        sa += c(1 - rho) * (g * g)
        delta = xp.sqrt(ad + eps) / xp.sqrt(sa + eps) * g
        ad *= c(rho)
        ad += c(1 - rho) * (delta * delta)
        w -= c(lr) * delta


class LAMB(PieceOptimizer):
    """LambUpdateKernelUtil@v0.9.0 (model_update_kernel_util.cpp): the Adam direction
    d = (m/bc1)/(√v/√bc2 + ε) (m, v from g + l2·w), then trust = ‖w‖/‖d‖ (1 where either norm is 0; ‖d‖ is of the
    Adam direction alone) and w ← w − lr·trust·(d + wd·w). With `adam_w_mode` (the default) `weight_decay` is that
    decoupled wd, otherwise it is l2. The norms are of the whole parameter: on a split (model-parallel) parameter
    they are summed over its pieces (ops/split_norms.py), so N devices update as 1 device."""

    needs_whole_tensor_norms = True

    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0, adam_w_mode=True,
                 do_bias_correction=True, amsgrad=False):
        if amsgrad:
            raise RuntimeError("LAMB does not support AMSGrad variant.")  # lamb.py@v0.9.0's error
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      adam_w_mode=adam_w_mode, do_bias_correction=do_bias_correction,
                                      amsgrad=amsgrad))

    def _check_group(self, group):
        check_common(group, betas=True)

    def state_names(self, group):
        return ("exp_avg", "exp_avg_sq")

    def split_piece_update(self, xp, w, g, states, lr, t, group):
        c = lambda x: scalar(w, x)  # noqa: E731
        wd = group["weight_decay"]
        decoupled, l2 = (wd, 0.0) if group["adam_w_mode"] else (0.0, wd)
        if l2:
            g = g + c(l2) * w
        beta1, beta2 = group["betas"]
        bc1, bc2 = _bias_corrections(group, t)
        m, v = states
        _adam_moments(xp, w, g, m, v, beta1, beta2)
        d = (m / c(bc1)) / (xp.sqrt(v) / c(math.sqrt(bc2)) + c(group["eps"]))
        w_norm, d_norm = yield [w, d]
        trust = trust_ratio(xp, w_norm, d_norm)
        # (lr·trust in float64, then in w's dtype: on the host a Python float, on a device a 0-d array)
        w -= (c(lr * trust) if isinstance(trust, float) else (lr * trust).astype(w.dtype)) * (d + c(decoupled) * w)
