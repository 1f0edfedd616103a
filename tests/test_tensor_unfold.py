"""`Tensor.unfold(dimension, size, step)` and `flow._C.unfold_tensor` (OneFlow's `unfold_tensor` op and its
gradient `unfold_tensor_grad`, v0.9.0): windows against a numpy loop written here and against torch's
Tensor.unfold (forward and backward), OneFlow's docstring example, OneFlow's argument checks, nn.Graph == eager.
The op's SBP signatures and gradient on 1-4 simulated devices: `validate` and the gradient check (ops/examples.py
rows); on 2 MPI ranks with splits on other axes: tests/mpi_scripts/nn_extra_global.py."""
import numpy as np
import pytest

import oneflow_compat as flow

CASES = [((7,), 0, 2, 1), ((3, 4, 5), 0, 2, 1), ((3, 4, 5), 1, 3, 2), ((3, 4, 5), 2, 2, 3), ((6, 5), 0, 6, 1),
         ((2, 9, 3), 1, 1, 4), ((), 0, 1, 1), ((), 0, 1, 3)]


def _windows_numpy(x, d, size, step):
    """y[..., i, ..., j] = x[..., i * step + j, ...], by loops."""
    if x.ndim == 0:
        return x.reshape(1)
    n = (x.shape[d] - size) // step + 1
    y = np.zeros(x.shape[:d] + (n,) + x.shape[d + 1:] + (size,), x.dtype)
    for i in range(n):
        for j in range(size):
            y[(slice(None),) * d + (i,) + (Ellipsis, j)] = np.take(x, i * step + j, axis=d)
    return y


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_windows_and_gradient_match_a_numpy_loop(case):
    shape, d, size, step = case
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    t = flow.tensor(x, requires_grad=True)
    y = t.unfold(d, size, step)
    want = _windows_numpy(x, d, size, step)
    assert tuple(y.shape) == want.shape and y.dtype == flow.float64
    np.testing.assert_array_equal(y.numpy(), want)
    w = rng.standard_normal(want.shape)
    (y * flow.tensor(w)).sum().backward()
    # d(sum w * y)/dx: every window entry's weight added back onto the x entry it was read from
    dx = np.zeros(x.shape) if x.ndim else np.zeros(())
    if x.ndim == 0:
        dx = w.reshape(())
    else:
        n = want.shape[d]
        for i in range(n):
            for j in range(size):
                idx = (slice(None),) * d + (i * step + j,)
                dx[idx] += w[(slice(None),) * d + (i,) + (Ellipsis, j)]
    np.testing.assert_allclose(t.grad.numpy(), dx, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_torch_forward_and_backward_on_permuted_inputs(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 5)).astype(dtype)
    for perm in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        for d, size, step in ((0, 2, 1), (1, 3, 2), (2, 1, 3)):
            t = flow.tensor(x, requires_grad=True)
            ref = torch.tensor(x, requires_grad=True)
            y = t.permute(*perm).unfold(d, size, step)
            r = ref.permute(*perm).unfold(d, size, step)
            np.testing.assert_array_equal(y.numpy(), r.detach().numpy())
            w = rng.standard_normal(tuple(r.shape)).astype(dtype)
            (y * flow.tensor(w)).sum().backward()
            (r * torch.tensor(w)).sum().backward()
            np.testing.assert_allclose(t.grad.numpy(), ref.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_oneflow_docstring_example_and_the_functional_form():
    x = flow.arange(1, 8)
    y = x.unfold(0, 2, 1)
    assert y.dtype == flow.int64
    np.testing.assert_array_equal(y.numpy(), [[1, 2], [2, 3], [3, 4], [4, 5], [5, 6], [6, 7]])
    np.testing.assert_array_equal(x.unfold(0, 2, 2).numpy(), [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(flow._C.unfold_tensor(x, 0, 3, 2).numpy(), [[1, 2, 3], [3, 4, 5], [5, 6, 7]])
    # nn.functional.unfold stays im2col (4-D blocks), a different op of the same name
    assert tuple(flow.nn.functional.unfold(flow.ones(1, 2, 4, 4), 2).shape) == (1, 8, 9)


def test_bad_arguments_raise_oneflows_checks():
    x = flow.ones(3, 4)
    with pytest.raises(RuntimeError, match="dimension should be >= 0, but got -1"):
        x.unfold(-1, 2, 1)
    with pytest.raises(RuntimeError, match="dimension should be <= 1 for a 2-d tensor, but got 2"):
        x.unfold(2, 2, 1)
    with pytest.raises(RuntimeError, match=r"size should be > 0 and <= 4 \(the size of dimension 1\), but got 5"):
        x.unfold(1, 5, 1)
    with pytest.raises(RuntimeError, match=r"size should be > 0 and <= 3 \(the size of dimension 0\), but got 0"):
        x.unfold(0, 0, 1)
    with pytest.raises(RuntimeError, match="step should be > 0, but got 0"):
        x.unfold(0, 2, 0)
    with pytest.raises(TypeError, match="size must be an int, got float"):
        x.unfold(0, 2.0, 1)


def test_in_a_graph_equals_eager():
    x = flow.tensor(np.random.default_rng(3).standard_normal((4, 9, 3)).astype(np.float32))
    lin = flow.nn.Linear(3, 2)

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def build(self, t):
            return self.lin(t.unfold(1, 4, 2).permute(0, 1, 3, 2)).sum(dim=2)

    eager = lin(x.unfold(1, 4, 2).permute(0, 1, 3, 2)).sum(dim=2)
    np.testing.assert_allclose(G()(x).numpy(), eager.numpy(), rtol=1e-6, atol=1e-6)
