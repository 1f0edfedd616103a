"""`flow.optim.SGD` (OneFlow 0.9's eager formulas, which are PyTorch's).

`weight_decay` is an L2 term added to the gradient (OneFlow passes it as the kernel's `l2`): g ← g + wd·w.
Without momentum: w ← w − lr·g (the legacy `sgd_update` kernel). With momentum β (buffer starting at zero):
buf ← β·buf + (1 − dampening)·g; w ← w − lr·buf, or w ← w − lr·(g + β·buf) with `nesterov` (and `+` instead of
`−` with `maximize`). For a constant lr and no dampening this equals OneFlow 0.5's momentum kernel
(m ← β·m − lr·g; w ← w + m, with m = −lr·buf).
"""
import numpy as np

from oneflow_compat.kernels import optim as optim_kernels
from oneflow_compat.optim.optimizer import Optimizer, array_module, pieces, zeros_like


class SGD(Optimizer):
    def __init__(self, params, lr=0.001, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 maximize=False, fused=False):
        # fused (OneFlow 0.9): update parameter groups with one fused kernel; a scheduling choice, same numbers
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, fused=bool(fused))
        super().__init__(params, defaults)

    def _check_group(self, group):
        # OneFlow 0.9's checks and words (python/oneflow/nn/optimizer/sgd.py): assertions; nesterov is not checked
        assert group["lr"] >= 0.0, f"Invalid learning rate: {group['lr']}"
        assert group["momentum"] >= 0.0, f"Invalid momentum: {group['momentum']}"
        assert group["weight_decay"] >= 0.0, f"Invalid weight_decay: {group['weight_decay']}"
        if group["maximize"] and not getattr(self, "_warned_maximize", False):
            import warnings

            self._warned_maximize = True
            warnings.warn("Only Momentum > 0.0, param `maximize` takes effect. ", FutureWarning)

    def _update(self, group, param, state):
        lr = group["lr"]
        grads = self._grad_pieces(param)
        if group["momentum"] == 0:
            for w, g in zip(pieces(param), grads):
                plain_update(array_module(w), w, g, lr, group)
            return
        if "momentum_buf" not in state:
            state["momentum_buf"] = zeros_like(param)
        for w, g, buf in zip(pieces(param), grads, pieces(state["momentum_buf"])):
            momentum_update(array_module(w), w, g, buf, lr, group)


def plain_update(xp, w, g, lr, group):
    """One step without momentum of one piece in place (the eager step and nn.Graph's compiled step). `maximize`
    has no effect here, as in OneFlow 0.9 (its naive sgd_update takes no maximize: "Only Momentum > 0.0, param
    `maximize` takes effect")."""
    optim_kernels.sgd_update(xp, w, g, lr=lr, weight_decay=group["weight_decay"])


def momentum_update(xp, w, g, buf, lr, group):
    """One momentum step of one piece in place, with `group`'s options (the eager step and nn.Graph's compiled
    step both run it)."""
    f32 = np.float32
    beta = group["momentum"]
    g = optim_kernels.add_regularization(xp, g, w, l2=group["weight_decay"])
    buf *= f32(beta)
    buf += f32(1 - group["dampening"]) * g
    step = g + f32(beta) * buf if group["nesterov"] else buf
    if group["maximize"]:
        w += f32(lr) * step
    else:
        w -= f32(lr) * step
