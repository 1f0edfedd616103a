"""`flow.optim.Adam` (OneFlow 0.9's eager formula, which is PyTorch's).

g ← g + wd·w (`weight_decay` is an L2 term, OneFlow's `l2`); m ← β1·m + (1−β1)·g; v ← β2·v + (1−β2)·g²;
w ← w − lr/bc1 · m / (√v/√bc2 + ε), where bc_i = 1 − β_i^t (t = the optimizer's step count, from 1) when
`do_bias_correction` (the default), else 1. With `amsgrad`, √v is taken of the running maximum of v.

The legacy `adam_update` kernel computes w ← w − lr'·m/(√v + ε'), so it is called with lr' = lr·√bc2/bc1 and
ε' = ε·√bc2 — the same update.
"""
import math

import numpy as np

from oneflow_compat.kernels import optim as optim_kernels
from oneflow_compat.optim.optimizer import Optimizer, array_module, pieces, zeros_like


class Adam(Optimizer):
    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                 do_bias_correction=True, fused=False):
        # fused (OneFlow 0.9): update parameter groups with one fused kernel; a scheduling choice, same numbers
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        do_bias_correction=do_bias_correction, fused=bool(fused))
        super().__init__(params, defaults)

    def _check_group(self, group):
        b1, b2 = group["betas"]
        if group["lr"] < 0:
            raise ValueError("Invalid learning rate: %r" % (group["lr"],))
        if group["eps"] < 0:
            raise ValueError("Invalid epsilon value: %r" % (group["eps"],))
        if not 0 <= b1 < 1:
            raise ValueError("Invalid beta parameter at index 0: %r" % (b1,))
        if not 0 <= b2 < 1:
            raise ValueError("Invalid beta parameter at index 1: %r" % (b2,))
        if group["weight_decay"] < 0:
            raise ValueError("Invalid weight_decay value: %r" % (group["weight_decay"],))

    def _update(self, group, param, state):
        lr = group["lr"]
        beta1, beta2 = group["betas"]
        if group["do_bias_correction"]:
            t = self._step_count + 1
            bc1, bc2 = 1 - beta1 ** t, 1 - beta2 ** t
        else:
            bc1 = bc2 = 1.0
        for name in ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ()):
            if name not in state:
                state[name] = zeros_like(param)
        moments = [pieces(state["exp_avg"]), pieces(state["exp_avg_sq"])]
        if group["amsgrad"]:
            moments.append(pieces(state["max_exp_avg_sq"]))
        for w, g, *mv in zip(pieces(param), self._grad_pieces(param), *moments):
            piece_update(array_module(w), w, g, mv, lr, bc1, bc2, group)


def piece_update(xp, w, g, moments, lr, bc1, bc2, group):
    """One Adam step of one piece in place (`moments`: m, v and, with amsgrad, max v), with `group`'s options and
    the bias corrections bc1, bc2 (the eager step and nn.Graph's compiled step both run it)."""
    eps, beta1, beta2 = group["eps"], group["betas"][0], group["betas"][1]
    g = optim_kernels.add_regularization(xp, g, w, l2=group["weight_decay"])
    if not group["amsgrad"]:
        root_bc2 = math.sqrt(bc2)
        optim_kernels.adam_update(xp, w, moments[0], moments[1], g, lr=lr * root_bc2 / bc1, beta1=beta1,
                                  beta2=beta2, epsilon=eps * root_bc2)
        return
    _amsgrad_update(xp, w, g, *moments, lr=lr, beta1=beta1, beta2=beta2, eps=eps, bc1=bc1, bc2=bc2)


def _amsgrad_update(xp, w, g, m, v, max_v, *, lr, beta1, beta2, eps, bc1, bc2):
    f32 = np.float32
    m *= f32(beta1)
    m += f32(1 - beta1) * g
    v *= f32(beta2)
    v += f32(1 - beta2) * g * g
    xp.maximum(max_v, v, out=max_v)
    denom = xp.sqrt(max_v)
    denom /= f32(math.sqrt(bc2))
    denom += f32(eps)
    w -= f32(lr / bc1) * (m / denom)
