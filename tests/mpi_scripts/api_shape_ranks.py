"""OneFlow 0.9's shape / indexing / product / linalg names on global tensors split over 2 MPI ranks (run by
tests/test_api_shape_mpi.py under `mpiexec -n 2`): each family's value on S(0) / S(1) layouts against numpy written
here, and the gradients of the differentiable ones against the same program on broadcast tensors (the numbers do
not depend on the layout). Rank 0 prints `OK <family>` per family."""
import numpy as np

import oneflow as flow
from two_rank_layouts import B, S0, S1, g, ok


def close(t, want, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(t.numpy(), want, rtol=rtol, atol=atol)


def same_grads(fn, arrays, sbps):
    """fn's value and input gradients (loss: sum(out * w)) on the given layouts equal those on broadcast inputs."""
    results = []
    for layout in (sbps, [B] * len(arrays)):
        xs = [g(a, s, grad=True) for a, s in zip(arrays, layout)]
        out = fn(*xs)
        w = g(np.random.default_rng(5).standard_normal(tuple(out.shape)), B)
        (out * w).sum().backward()
        results.append([out.numpy()] + [x.grad.numpy() for x in xs])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    return results[0][0]


r = np.random.default_rng(0)
a = r.standard_normal((6, 4, 5))

# joining and splitting
close(flow.hstack([g(a[0], S0), g(a[1], S1)]), np.hstack([a[0], a[1]]))
close(flow.dstack([g(a[0], S0), g(a[1], S0)]), np.dstack([a[0], a[1]]))
for piece, want in zip(flow.tensor_split(g(a, S0), 4, 1), np.array_split(a, 4, 1)):
    close(piece, want)
for piece, want in zip(flow.vsplit(g(a, S1), [1, 4]), np.vsplit(a, [1, 4])):
    close(piece, want)
ok("joining and splitting")

# dims
close(flow.movedim(g(a, S0), 0, -1), np.moveaxis(a, 0, -1))
close(flow.select(g(a, S1), 1, 2), a[:, 2])
close(flow.swapaxes(g(a, S0), 0, 2), np.swapaxes(a, 0, 2))
out = same_grads(lambda x: flow.diagonal(x, 1, 0, 2), [a], [S0])
np.testing.assert_allclose(out, np.diagonal(a, 1, 0, 2))
out = same_grads(lambda x: flow.as_strided(x, (3, 4), (7, 2), 1), [a], [S1])
np.testing.assert_allclose(out, np.lib.stride_tricks.as_strided(a.reshape(-1)[1:], (3, 4), (56, 16)))
close(flow.broadcast_to(g(a[:, :1], S0), (6, 4, 5)), np.broadcast_to(a[:, :1], (6, 4, 5)))
ok("dims, diagonal, as_strided, broadcasting")

# indexing
idx = np.array([0, 5, 2, 0])
src = r.standard_normal((4, 4, 5))
base = a.copy()
np.add.at(base, idx, 0.5 * src)
out = same_grads(lambda x, s: flow.index_add(x, 0, g(idx, B, dtype=flow.int64), s, alpha=0.5), [a, src], [S1, S0])
np.testing.assert_allclose(out, base)
out = same_grads(lambda x: flow.repeat_interleave(x, 2, dim=1), [a], [S0])
np.testing.assert_allclose(out, np.repeat(a, 2, axis=1))
seq = np.sort(r.standard_normal((6, 7)), axis=1)
vals = r.standard_normal((6, 3))
out = flow.searchsorted(g(seq, S0), g(vals, S0))
assert out.numpy().tolist() == [np.searchsorted(seq[i], vals[i]).tolist() for i in range(6)]
x = np.array([3, 1, 1, 0, 6, 3])
assert flow.bincount(g(x, S0, dtype=flow.int64)).numpy().tolist() == np.bincount(x).tolist()
ok("index_add, repeat_interleave, searchsorted, bincount")

# products and linalg
b = r.standard_normal((4, 5, 3))
out = same_grads(lambda p, q: flow.tensordot(p, q, 2), [a, b], [S0, S1])
np.testing.assert_allclose(out, np.tensordot(a, b, 2), rtol=1e-10)
m, v = r.standard_normal((6, 4)), r.standard_normal(4)
out = same_grads(flow.mv, [m, v], [S0, B])
np.testing.assert_allclose(out, m @ v)
u, w = r.standard_normal((6, 3)), r.standard_normal((6, 3))
out = same_grads(flow.linalg.cross, [u, w], [S0, S0])
np.testing.assert_allclose(out, np.cross(u, w))
out = same_grads(lambda t: flow.linalg.matrix_norm(t, 1), [a], [S0])
np.testing.assert_allclose(out, np.linalg.norm(a, 1, axis=(1, 2)))
out = same_grads(lambda t: flow.linalg.vector_norm(t, 3, dim=2), [a], [S1])
np.testing.assert_allclose(out, np.sum(np.abs(a) ** 3, 2) ** (1 / 3))
mats = r.standard_normal((4, 3, 3)) + 3 * np.eye(3)
out = same_grads(flow.linalg.inv, [mats], [S0])
np.testing.assert_allclose(out, np.linalg.inv(mats), rtol=1e-10)
ok("tensordot, mv, cross, norms, inv")


# inside nn.Graph, on split tensors: the same numbers as eagerly
class Composed(flow.nn.Graph):
    def build(self, x, m, i, s):
        return (flow.diagonal(flow.movedim(x, 0, -1)), flow.tensordot(x, x, ([0, 1], [0, 1])),
                flow.index_add(x, 0, i, s), flow.linalg.inv(m), flow.searchsorted(flow.sort(x, -1)[0], x),
                flow.linalg.matrix_norm(x), flow.as_strided(x, (2, 3), (3, 1), 4), flow.searchsorted(x[0, 0], 0.5))


args = (g(a, S0), g(mats, S0), g(idx, B, dtype=flow.int64), g(src, S1))
for got, want in zip(Composed()(*args), Composed.build(None, *args)):
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
ok("inside nn.Graph on split tensors == eager")
