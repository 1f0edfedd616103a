"""The api-gaps features on global tensors split over 2 MPI ranks (run by tests/test_api_gaps_mpi.py under
`mpiexec -n 2`): values and gradients on S(0) / S(1) layouts equal those of the same program on broadcast tensors
(the numbers do not depend on the layout), and the in-place renormalisation of a row-split embedding weight equals
numpy's. Rank 0 prints `OK <family>` per family."""
import numpy as np

import oneflow as flow
from two_rank_layouts import B, S0, S1, g, ok


def same_grads(fn, arrays, sbps, ints=()):
    """fn's value and input gradients (loss: sum(out * w)) on the given layouts equal those on broadcast inputs."""
    results = []
    for layout in (sbps, [B] * len(arrays)):
        xs = [g(a, s, dtype=flow.int64) if i in ints else g(a, s, grad=True)
              for i, (a, s) in enumerate(zip(arrays, layout))]
        out = fn(*xs)
        w = g(np.random.default_rng(5).standard_normal(tuple(out.shape)), B)
        (out * w).sum().backward()
        results.append([out.numpy()] + [x.grad.numpy() for i, x in enumerate(xs) if i not in ints])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    return results[0][0]


r = np.random.default_rng(0)

# embedding: max_norm renormalises the rows of a row-split weight where they lie; scale_grad_by_freq
w0 = r.standard_normal((6, 3)) * 2
idx = np.array([[1, 2, 1], [5, 1, 0]])
w = flow.nn.Parameter(g(w0, S0))
flow.nn.functional.embedding(g(idx, B, dtype=flow.int64), w, max_norm=1.0)
assert w.sbp == (S0,)
want = w0.copy()
for row in (0, 1, 2, 5):
    norm = np.linalg.norm(want[row])
    if norm > 1.0:
        want[row] *= 1.0 / (norm + 1e-7)
np.testing.assert_allclose(w.numpy(), want, rtol=1e-12)
same_grads(lambda wt, i: flow.nn.functional.embedding(i, wt, scale_grad_by_freq=True, padding_idx=0),
           [w0, idx], [S0, S0], ints=(1,))
same_grads(lambda wt, i: flow.nn.functional.embedding(i, wt, scale_grad_by_freq=True), [w0, idx], [S1, S1],
           ints=(1,))
ok("embedding")

# interpolate bicubic / area, grid_sample 5-D and bicubic, affine_grid 3-D, negative pads
x4 = r.standard_normal((4, 2, 5, 6))
same_grads(lambda x: flow.nn.functional.interpolate(x, size=(7, 4), mode="bicubic"), [x4], [S0])
same_grads(lambda x: flow.nn.functional.interpolate(x, scale_factor=0.5, mode="area"), [x4], [S1])
x5, g5 = r.standard_normal((2, 3, 3, 4, 5)), r.uniform(-1.2, 1.2, (2, 2, 3, 2, 3))
same_grads(lambda x, gr: flow.nn.functional.grid_sample(x, gr, padding_mode="reflection"), [x5, g5], [S0, S0])
same_grads(lambda x, gr: flow.nn.functional.grid_sample(x, gr, mode="bicubic"), [x4, r.uniform(-1, 1, (4, 3, 2, 2))],
           [S1, S0])
same_grads(lambda t: flow.nn.functional.affine_grid(t, [4, 1, 2, 3, 4]), [r.standard_normal((4, 3, 4))], [S0])
same_grads(lambda x: flow.nn.functional.pad(x, (-1, 2, 1, -2), mode="replicate"), [x4], [S1])
ok("resampling and padding")

# scatter multiply, einsum with ellipsis and diagonals, norms
a = r.standard_normal((4, 5))
same_grads(lambda x, i, s: flow.scatter(x, 1, i, s, reduce="multiply"),
           [a, np.array([[0, 0, 2], [1, 4, 1], [3, 3, 3], [2, 0, 1]]), r.standard_normal((4, 3))], [S0, S0, S0],
           ints=(1,))
same_grads(lambda x, y: flow.einsum("...ii,...i->...", x, y), [r.standard_normal((4, 3, 3)), r.standard_normal(3)],
           [S0, B])
same_grads(lambda x: flow.einsum("bii->bi", x), [r.standard_normal((4, 3, 3))], [S1])
same_grads(lambda x: flow.norm(x, float("inf")), [a], [S0])
same_grads(lambda x: flow.norm(x, 3), [a], [S1])
same_grads(lambda x: x.norm(0.5, dim=1), [np.abs(a) + 0.1], [S0])
ok("scatter, einsum, norm")
