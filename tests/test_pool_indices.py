"""OneFlow 0.9's pools with indices and their inverse: `return_indices=True` of `nn.MaxPool1d/2d/3d` and
`F.max_pool*d`, `nn.AdaptiveMaxPool1d/2d/3d` / `F.adaptive_max_pool*d`, `nn.MaxUnpool1d/2d/3d` /
`F.max_unpool*d`: values, indices (flat within each plane) and gradients against PyTorch in float64 and float32
(indices also against a numpy reference written here), eagerly and in nn.Graph; OneFlow's documented examples and
errors."""
import itertools
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nn_reference as ref  # noqa: E402

F = flow.nn.functional


def _distinct(shape, dtype=np.float64, seed=0):
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n) * 0.05 - n * 0.025).reshape(shape).astype(dtype)


def _adaptive_reference(x, out):
    """(maxima, flat indices) over PyTorch's adaptive windows [floor(i n / o), ceil((i + 1) n / o))."""
    spatial = x.shape[2:]
    y = np.empty(x.shape[:2] + tuple(out))
    ind = np.empty(x.shape[:2] + tuple(out), np.int64)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for idx in itertools.product(*[range(o) for o in out]):
            best, where = -np.inf, -1
            ranges = [range((i * s) // o, -(-((i + 1) * s) // o)) for i, s, o in zip(idx, spatial, out)]
            for cell in itertools.product(*ranges):
                if x[(n, c) + cell] > best:
                    best, where = x[(n, c) + cell], int(np.ravel_multi_index(cell, spatial))
            y[(n, c) + idx], ind[(n, c) + idx] = best, where
    return y, ind


POOLS = [
    # (nd, x shape, kernel_size, stride, padding, dilation, ceil_mode)
    (1, (2, 3, 9), 3, 2, 1, 1, False),
    (1, (2, 2, 10), 2, 3, 0, 2, True),
    (2, (2, 3, 7, 6), (3, 2), 2, 1, 1, False),
    (2, (1, 2, 6, 7), 3, (2, 1), (1, 0), (1, 2), True),
    (3, (2, 2, 4, 5, 4), 2, 2, (0, 1, 0), 1, False),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", range(len(POOLS)))
def test_max_pool_return_indices_matches_torch(k, dtype):
    torch = pytest.importorskip("torch")
    nd, xs, ks, st, pad, dil, ceil = POOLS[k]
    x = _distinct(xs, dtype, seed=k)
    module = [flow.nn.MaxPool1d, flow.nn.MaxPool2d, flow.nn.MaxPool3d][nd - 1](
        ks, st, pad, dil, return_indices=True, ceil_mode=ceil)
    tmodule = [torch.nn.MaxPool1d, torch.nn.MaxPool2d, torch.nn.MaxPool3d][nd - 1](
        ks, st, pad, dil, return_indices=True, ceil_mode=ceil)
    outs, grads, rs = ref.eager(lambda t: module(t)[0], [x])
    t_outs, t_grads = ref.torch_ref(lambda t: tmodule(t)[0], [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, "pool %d" % k)
    y, ind = module(flow.tensor(x))
    ty, tind = tmodule(torch.tensor(x))
    assert ind.dtype == flow.int64
    np.testing.assert_array_equal(ind.numpy(), tind.numpy())
    # the functional form returns the same pair
    fy, find = getattr(F, "max_pool%dd" % nd)(flow.tensor(x), ks, st, pad, dil, return_indices=True,
                                               ceil_mode=ceil)
    np.testing.assert_array_equal(find.numpy(), ind.numpy())
    np.testing.assert_array_equal(fy.numpy(), y.numpy())


ADAPTIVE = [(1, (2, 3, 7), 3), (1, (1, 2, 5), 8), (2, (2, 3, 7, 5), (3, 2)), (2, (1, 2, 6, 6), (4, None)),
            (3, (2, 2, 4, 5, 3), (2, 3, 2))]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", range(len(ADAPTIVE)))
def test_adaptive_max_pool_matches_torch_and_a_reference(k, dtype):
    nd, xs, out = ADAPTIVE[k]
    x = _distinct(xs, dtype, seed=k)
    module = [flow.nn.AdaptiveMaxPool1d, flow.nn.AdaptiveMaxPool2d, flow.nn.AdaptiveMaxPool3d][nd - 1](
        out, return_indices=True)
    y, ind = module(flow.tensor(x))
    full = [out] * nd if isinstance(out, int) else [xs[2 + i] if v is None else v for i, v in enumerate(out)]
    want_y, want_ind = _adaptive_reference(x, full)
    np.testing.assert_array_equal(y.numpy(), want_y.astype(dtype))
    np.testing.assert_array_equal(ind.numpy(), want_ind)
    plain = getattr(F, "adaptive_max_pool%dd" % nd)(flow.tensor(x), out)
    np.testing.assert_array_equal(plain.numpy(), y.numpy())
    pair = getattr(flow._C, "adaptive_max_pool%dd" % nd)(flow.tensor(x), full)
    np.testing.assert_array_equal(pair[1].numpy(), want_ind)
    torch = pytest.importorskip("torch")
    tmodule = [torch.nn.AdaptiveMaxPool1d, torch.nn.AdaptiveMaxPool2d, torch.nn.AdaptiveMaxPool3d][nd - 1](out)
    no_ind = [flow.nn.AdaptiveMaxPool1d, flow.nn.AdaptiveMaxPool2d, flow.nn.AdaptiveMaxPool3d][nd - 1](out)
    outs, grads, rs = ref.eager(no_ind, [x])
    t_outs, t_grads = ref.torch_ref(tmodule, [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, "adaptive %d" % k)
    assert repr(no_ind) == "AdaptiveMaxPool%dd(output_size=%s)" % (nd, out)


UNPOOLS = [(1, (2, 3, 8), 2, None, 0, None), (1, (1, 2, 9), 3, 2, 1, (1, 2, 9)),
           (2, (2, 2, 6, 6), 2, 2, 0, (7, 6)), (2, (1, 3, 7, 5), 3, 2, 1, None),
           (3, (1, 2, 4, 4, 6), 2, None, 0, None)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", range(len(UNPOOLS)))
def test_max_unpool_matches_torch(k, dtype):
    torch = pytest.importorskip("torch")
    nd, xs, ks, st, pad, out = UNPOOLS[k]
    x = _distinct(xs, dtype, seed=k)
    tpool = [torch.nn.functional.max_pool1d, torch.nn.functional.max_pool2d, torch.nn.functional.max_pool3d][nd - 1]
    pooled, ind = tpool(torch.tensor(x), ks, st, pad, return_indices=True)
    values = pooled.numpy()
    unpool = [flow.nn.MaxUnpool1d, flow.nn.MaxUnpool2d, flow.nn.MaxUnpool3d][nd - 1](ks, st, pad)
    tunpool = [torch.nn.MaxUnpool1d, torch.nn.MaxUnpool2d, torch.nn.MaxUnpool3d][nd - 1](ks, st, pad)
    outs, grads, rs = ref.eager(lambda v, i: unpool(v, i, output_size=out), [values, ind.numpy()], wrt=[0])
    t_outs, t_grads = ref.torch_ref(lambda v, i: tunpool(v, i, output_size=out), [values, ind.numpy()], rs,
                                    wrt=[0])
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, "unpool %d" % k)
    functional = getattr(F, "max_unpool%dd" % nd)(flow.tensor(values), flow.tensor(ind.numpy()), ks, st, pad, out)
    np.testing.assert_array_equal(functional.numpy(), outs[0])


def test_max_unpool1d_docstring_example_and_pool_round_trip():
    pool = flow.nn.MaxPool1d(2, stride=2, return_indices=True)
    unpool = flow.nn.MaxUnpool1d(2, stride=2)
    x = flow.tensor([[[1., 2, 3, 4, 5, 6, 7, 8]]])
    output, indices = pool(x)
    np.testing.assert_array_equal(unpool(output, indices).numpy(), [[[0., 2., 0., 4., 0., 6., 0., 8.]]])
    x9 = flow.tensor([[[1., 2, 3, 4, 5, 6, 7, 8, 9]]])
    output, indices = pool(x9)
    np.testing.assert_array_equal(unpool(output, indices, output_size=x9.size()).numpy(),
                                  [[[0., 2., 0., 4., 0., 6., 0., 8., 0.]]])
    np.testing.assert_array_equal(unpool(output, indices).numpy(), [[[0., 2., 0., 4., 0., 6., 0., 8.]]])


def test_max_unpool2d_docstring_example():
    pool = flow.nn.MaxPool2d(2, stride=2, return_indices=True)
    unpool = flow.nn.MaxUnpool2d(2, stride=2)
    x = flow.tensor([[[[1., 2., 3., 4.], [5., 6., 7., 8.], [9., 10., 11., 12.], [13., 14., 15., 16.]]]])
    output, indices = pool(x)
    np.testing.assert_array_equal(unpool(output, indices).numpy(),
                                  [[[[0, 0, 0, 0], [0, 6, 0, 8], [0, 0, 0, 0], [0, 14, 0, 16]]]])
    got = unpool(output, indices, output_size=flow.Size([1, 1, 5, 5])).numpy()
    np.testing.assert_array_equal(got, [[[[0, 0, 0, 0, 0], [6, 0, 8, 0, 0], [0, 0, 0, 14, 0], [16, 0, 0, 0, 0],
                                          [0, 0, 0, 0, 0]]]])


def test_pool_index_errors():
    x = flow.tensor(_distinct((1, 1, 4, 4)))
    y, ind = flow.nn.MaxPool2d(2, return_indices=True)(x)
    with pytest.raises(RuntimeError, match="Found an invalid max index: 15, output volumes are of size 9"):
        flow.nn.MaxUnpool2d(2)(y, ind, output_size=(3, 3))
    with pytest.raises(RuntimeError, match="pad should be smaller than half of kernel size"):
        flow.nn.MaxUnpool2d(2, padding=2)(y, ind)
    with pytest.raises(RuntimeError, match="each element in `kernel_size` must be greater than 0, got 0"):
        F.max_unpool2d(y, ind, 0)
    with pytest.raises(ValueError, match="pad should be at most half of kernel size"):
        flow.nn.MaxPool2d(2, padding=2, return_indices=True)(x)
    with pytest.raises(AssertionError, match="the length of 'output_size' does not match the input size"):
        flow.nn.AdaptiveMaxPool2d((1, 2, 3))(x)


def test_indices_pools_and_unpool_in_a_graph_equal_eager():
    pool = flow.nn.MaxPool2d(3, 2, 1, return_indices=True)
    unpool = flow.nn.MaxUnpool2d(3, 2, 1)
    adaptive = flow.nn.AdaptiveMaxPool2d((2, 3), return_indices=True)

    def run(x):
        y, ind = pool(x)
        a, a_ind = adaptive(x)
        return unpool(y, ind, output_size=x.shape), a, a_ind

    class Forward(flow.nn.Graph):
        def __init__(self):
            super().__init__()

        def build(self, x):
            return run(x)

    x = flow.tensor(_distinct((2, 3, 7, 6), np.float32))
    for got, want in zip(Forward()(x), run(x)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
