"""`flow.one_embedding.Ftrl` (OneFlow 0.9, python/oneflow/one_embedding.py; the formula is FtrlUpdateFunctor of
oneflow/user/kernels/model_update_kernel_util.h at v0.9.0):

    g ← g + weight_decay·w                       (the eager step passes weight_decay as the kernel's l2)
    acc' = acc + g²;  σ = (acc'^lr_power − acc^lr_power) / lr;  z ← z + g − σ·w
    w ← 0 if |z| < λ1 else (sign(z)·λ1 − z) / ((β + acc'^lr_power) / lr + λ2)

An optimizer of the `PieceOptimizer` protocol: eager steps, nn.Graph's compiled step and the sparse update of a
one_embedding table run this one formula. The states start as OneFlow starts them: accumulator_value at
initial_accumulator_value and z at 0 for dense parameters; an embedding's lines start both at
initial_accumulator_value (OneFlow's ftrl_update state_initializer).
"""
from oneflow_compat.optim.elementwise import PieceOptimizer, scalar


class Ftrl(PieceOptimizer):
    """FTRL: lr=1e-3, weight_decay=0, lr_power=-0.5, initial_accumulator_value=0.1, lambda1=0, lambda2=0, beta=0."""

    def __init__(self, params, lr=0.001, weight_decay=0.0, lr_power=-0.5, initial_accumulator_value=0.1,
                 lambda1=0.0, lambda2=0.0, beta=0.0):
        assert lr >= 0.0, f"Invalid learning rate: {lr}"
        assert weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}"
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, lr_power=lr_power,
                                      initial_accumulator_value=initial_accumulator_value, lambda1=lambda1,
                                      lambda2=lambda2, beta=beta))
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = {n: self.new_state(p, group, n) for n in self.state_names(group)}

    def _check_group(self, group):
        pass

    def state_names(self, group):
        return ("accumulator_value", "z")

    def state_init(self, group, name):
        return group["initial_accumulator_value"] if name == "accumulator_value" else 0.0

    def embedding_state_init(self, group, name):
        """An embedding line's initial state (both at initial_accumulator_value, OneFlow's ftrl_update)."""
        return group["initial_accumulator_value"]

    def piece_update(self, xp, w, g, states, lr, t, group):
        c = lambda x: scalar(w, x)  # noqa: E731
        acc, z = states
        g = g + c(group["weight_decay"]) * w
        next_acc = acc + g * g
        lr_power = c(group["lr_power"])
        acc_p, next_p = acc ** lr_power, next_acc ** lr_power
        sigma = (next_p - acc_p) / c(lr)
        z += g - sigma * w
        acc[...] = next_acc
        lambda1 = c(group["lambda1"])
        new_w = (xp.copysign(lambda1, z) - z) / ((c(group["beta"]) + next_p) / c(lr) + c(group["lambda2"]))
        w[...] = xp.where(xp.abs(z) >= lambda1, new_w, c(0.0))
