"""The nnextra helper's activations, cumprod and fmod on global tensors on every rank (tests/test_nn_extra.py runs
it under `mpiexec -n 2`): outputs and input gradients with the inputs split along the batch, along another axis or
broadcast equal what every rank computes alone on local tensors (the check of nn_ops_global.py). Rank 0 prints
`OK <case> <layout>` per case and layout, then DONE."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nn_ops_global import check, global_eager  # noqa: E402

import oneflow_compat as flow  # noqa: E402

nn, F = flow.nn, flow.nn.functional


def _x(*shape, seed=0, scale=2.0):
    x = np.random.default_rng(seed).uniform(-scale, scale, shape)
    for k in (0.0, 0.5, -0.5, 0.3):  # off the kinks
        x = np.where(np.abs(x - k) < 0.05, x + 0.2, x)
    return x


if __name__ == "__main__":
    x = _x(6, 4, 5)
    for name, make in [("CELU", lambda: nn.CELU(0.7)), ("SELU", lambda: nn.SELU()),
                       ("Hardshrink", lambda: nn.Hardshrink()), ("Softshrink", lambda: nn.Softshrink()),
                       ("Softsign", lambda: nn.Softsign()), ("Threshold", lambda: nn.Threshold(0.3, -1.0)),
                       ("QuickGELU", lambda: nn.QuickGELU())]:
        check(name, make, [x], [[0], [1], [None]])
    check("GLU", lambda: nn.GLU(1), [x], [[0], [1], [2]])
    check("cumprod", lambda: (lambda t: flow.cumprod(t, 1)), [x], [[0], [1], [2]])
    d = np.where(np.abs(_x(6, 4, 5, seed=1)) < 0.5, 0.7, _x(6, 4, 5, seed=1))
    check("fmod", lambda: (lambda a, b: flow.fmod(a, b)), [x * 3, d], [[0, 0], [1, 1], [2, None]])
    x4 = _x(4, 3, 6, 5, seed=2)
    check("Unfold", lambda: nn.Unfold((3, 2), dilation=(1, 2), padding=1, stride=(2, 1)), [x4], [[0], [None]])
    cols = _x(4, 12, 24, seed=3)
    check("Fold", lambda: nn.Fold((6, 5), 2, padding=1, stride=(2, 1)), [cols], [[0], [None]])
    # leftovers helper: Tensor.unfold (unfold_tensor) along axis 1; a split of axis 0 or 2 stays where it is, one of
    # axis 1 itself is boxed first
    check("Tensor.unfold", lambda: (lambda t: t.unfold(1, 3, 2)), [_x(6, 7, 5, seed=4)], [[0], [1], [2], [None]])
    pl = flow.placement("cpu", list(range(flow.env.get_world_size())))
    xg = flow.tensor(_x(6, 7, 5, seed=4), placement=pl, sbp=flow.sbp.broadcast).to_global(pl, flow.sbp.split(2))
    assert xg.unfold(1, 3, 2).sbp == (flow.sbp.split(2),), xg.unfold(1, 3, 2).sbp
    if global_eager.rank() == 0:
        print("DONE", flush=True)
