"""The base of the optimizers whose update is one formula per parameter piece (AdamW, RMSprop, Adagrad, Adadelta,
LAMB): each names its state tensors and their starting values, and gives `piece_update`, which updates one piece
of a parameter and of its states in place. The eager `step()` and nn.Graph's compiled step
(`_global/graph_optim.py`) both call it, so both run one formula.

Scalars are cast to the parameter's own dtype before they touch an array, so a float64 parameter is updated in
float64 throughout (a float32 scalar would round 0.9 to 0.8999999762 and drift from float64 references).
"""
import numpy as np

from oneflow_compat.ops import split_norms
from oneflow_compat.optim.optimizer import Optimizer, array_module, pieces, zeros_like
from oneflow_compat.runtime import global_eager


class PieceOptimizer(Optimizer):
    #: True where the update reads norms of the whole parameter (LAMB's trust ratio): on a split parameter the
    #: optimizer gives `split_piece_update`, and the norms are those of the whole (ops/split_norms.py)
    needs_whole_tensor_norms = False

    def state_names(self, group):
        """The names of a parameter's state tensors under `group`'s options."""
        raise NotImplementedError

    def state_init(self, group, name):
        """The starting value of state `name` (0 unless the optimizer says otherwise)."""
        return 0.0

    def piece_update(self, xp, w, g, states, lr, t, group):
        """Updates one piece `w` (and its `states`, in `state_names` order) in place from gradient piece `g`;
        `t` is the step number, counted from 1."""
        if not self.needs_whole_tensor_norms:
            raise NotImplementedError
        # the piece is the whole parameter: its own norms
        split_norms.run_updates([self.split_piece_update(xp, w, g, states, lr, t, group)],
                                lambda arrays: [own_norm(xp, a) for a in arrays[0]])

    def split_piece_update(self, xp, w, g, states, lr, t, group):
        """`piece_update` of an optimizer reading whole-parameter norms, as a generator: it yields the list of
        arrays whose whole norms it needs, receives those norms (floats, same order), and finishes the update."""
        raise NotImplementedError

    def new_state(self, param, group, name):
        state = zeros_like(param)
        init = self.state_init(group, name)
        if init:
            for piece in pieces(state):
                piece[...] = init
        return state

    def _update(self, group, param, state):
        names = self.state_names(group)
        for name in names:
            if name not in state:
                state[name] = self.new_state(param, group, name)
        t = self._step_count + 1
        work = zip(pieces(param), self._grad_pieces(param), *[pieces(state[n]) for n in names])
        if self.needs_whole_tensor_norms and param.is_global and split_norms.is_split_over_devices(
                param._value.placement, param._value.sbp):
            value = param._value
            runs = [self.split_piece_update(array_module(w), w, g, states, group["lr"], t, group)
                    for w, g, *states in work]
            if runs:  # (a rank outside the placement has no piece and no part in the norms)
                local = global_eager.site().runtime.local_indices(value.placement)
                split_norms.run_updates(runs, lambda arrays: split_norms.whole_norms(
                    global_eager.comm(), value.placement, value.sbp, local, arrays))
            return
        for w, g, *states in work:
            self.piece_update(array_module(w), w, g, states, group["lr"], t, group)


def own_norm(xp, a):
    """The L2 norm of array `a` as the whole-norm updates receive it: a float on the host; on a device a 0-d
    float64 device array of the same value (no synchronisation; ops/split_norms.py)."""
    norm = xp.sqrt((a * a).sum())
    return float(norm) if xp is np else norm.astype(np.float64)


def trust_ratio(xp, numerator, denominator):
    """numerator / denominator where both are > 0, else 1: a float from floats (the host), a 0-d device array
    in float64 from device norms (a `where`, not a branch that would read them)."""
    if isinstance(numerator, float) and isinstance(denominator, float):
        return numerator / denominator if numerator > 0 and denominator > 0 else 1.0
    valid = (numerator > 0) & (denominator > 0)
    return xp.where(valid, numerator / xp.where(valid, denominator, 1.0), 1.0)


def scalar(w, value):
    """`value` as a scalar of `w`'s dtype."""
    return w.dtype.type(value)


def check_common(group, *, betas=False):
    if group["lr"] < 0:
        raise ValueError("Invalid learning rate: %r" % (group["lr"],))
    if "eps" in group and group["eps"] < 0:
        raise ValueError("Invalid epsilon value: %r" % (group["eps"],))
    if group.get("weight_decay", 0) < 0:
        raise ValueError("Invalid weight_decay value: %r" % (group["weight_decay"],))
    if betas:
        b1, b2 = group["betas"]
        if not 0 <= b1 < 1:
            raise ValueError("Invalid beta parameter at index 0: %r" % (b1,))
        if not 0 <= b2 < 1:
            raise ValueError("Invalid beta parameter at index 1: %r" % (b2,))
