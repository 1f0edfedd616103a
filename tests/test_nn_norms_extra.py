"""api-nn: OneFlow 0.9's nn.RMSNorm, nn.RMSLayerNorm, nn.FusedBatchNorm1d/2d/3d (batch norm + addend + relu) and
their flow._C forms, and nn.init.orthogonal_: values and gradients against numpy / PyTorch, OneFlow's docstring
example, running statistics, a global case each, nn.Graph, errors."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn

P0 = flow.placement("cpu", ranks=[0])


def _torch():
    return pytest.importorskip("torch")


# --- RMSNorm / RMSLayerNorm ---------------------------------------------------------------------------------------
def test_rms_norm_docstring_example():
    input_arr = np.array([[[[-0.16046895, -1.03667831], [-0.34974465, 0.26505867]],
                           [[-1.24111986, -0.53806001], [1.72426331, 0.43572459]]],
                          [[[-0.77390957, -0.42610624], [0.16398858, -1.35760343]],
                           [[1.07541728, 0.11008703], [0.26361224, -0.48663723]]]], dtype=np.float32)
    y = nn.RMSNorm(2)(flow.Tensor(input_arr)).numpy()
    expected = np.array([[[[-0.21632987, -1.3975569], [-1.127044, 0.8541454]],
                          [[-1.2975204, -0.5625112], [1.3711083, 0.34648165]]],
                         [[[-1.2388322, -0.6820876], [0.16959298, -1.4040003]],
                          [[1.4068495, 0.14401469], [0.6735778, -1.2434478]]]], dtype=np.float32)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,normalized", [((3, 4, 5), (5,)), ((2, 3, 4), (3, 4))])
def test_rms_norm_values_and_gradients_against_numpy(shape, normalized):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    wv = rng.uniform(0.5, 1.5, normalized)
    m = nn.RMSNorm(normalized, eps=1e-3).to(flow.float64)
    m.weight.copy_(flow.tensor(wv))  # (a parameter's in-place fill, no autograd history)
    fx = flow.tensor(x, requires_grad=True)
    y = m(fx)
    axes = tuple(range(len(shape) - len(normalized), len(shape)))
    inv = 1 / np.sqrt((x ** 2).mean(axes, keepdims=True) + 1e-3)
    np.testing.assert_allclose(y.numpy(), x * inv * wv, rtol=1e-12)
    g = rng.standard_normal(shape)
    (y * flow.tensor(g)).sum().backward()
    n = int(np.prod(normalized))
    gw = g * wv
    dx = inv * gw - x * inv ** 3 * (gw * x).sum(axes, keepdims=True) / n
    np.testing.assert_allclose(fx.grad.numpy(), dx, rtol=1e-10, atol=1e-12)
    red = tuple(range(len(shape) - len(normalized)))
    np.testing.assert_allclose(m.weight.grad.numpy(), (g * x * inv).sum(red), rtol=1e-10)
    assert repr(m) == "RMSNorm(%s, eps=0.001, elementwise_affine=True)" % (tuple(normalized),)
    plain = flow._C.rms_norm(flow.tensor(x), None, normalized, 1e-3)
    np.testing.assert_allclose(plain.numpy(), x * inv, rtol=1e-12)


def test_rms_layer_norm_deprecated_t5_norm_and_global():
    with pytest.warns(UserWarning, match="^nn.RMSLayerNorm has been deprecated. Please use nn.RMSNorm instead.$"):
        m = nn.RMSLayerNorm(3, eps=1e-6)
    x = np.random.default_rng(1).standard_normal((2, 4, 3))
    y = m(flow.tensor(x))  # float64 in: cast to float32 first, as OneFlow's functor
    assert y.dtype == flow.float32
    np.testing.assert_allclose(y.numpy(), x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6), rtol=1e-5)
    gx = flow.tensor(x.astype(np.float32)).to_global(placement=P0, sbp=flow.sbp.split(0))
    gm = m.to_global(placement=P0, sbp=flow.sbp.broadcast)
    gy = gm(gx)
    assert gy.is_global
    np.testing.assert_allclose(gy.numpy(), y.numpy(), rtol=1e-6)
    r = nn.RMSNorm(3).to_global(placement=P0, sbp=flow.sbp.broadcast)(gx)
    np.testing.assert_allclose(r.numpy(), x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-5), rtol=1e-5)


def test_rms_norm_errors():
    with pytest.raises(RuntimeError, match=r"^Given normalized_shape=\(4,\), expected input with shape \(\*, 2,3,5\), "
                                           r"but got input of \(2,3,5\)$"):
        nn.RMSNorm(4)(flow.ones(2, 3, 5))
    with pytest.raises(RuntimeError, match=r"^Expected weight be the same shape with normalized_shape \(5,\), but got "
                                           r"\(4,\)$"):
        flow._C.rms_norm(flow.ones(2, 5), flow.ones(4), (5,), 1e-6)


# --- FusedBatchNorm -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("with_addend", [False, True])
def test_fused_batch_norm_is_relu_of_batch_norm_plus_addend_as_torch(dims, with_addend):
    torch = _torch()
    shape = {1: (6, 3), 2: (4, 3, 5, 2), 3: (2, 3, 2, 3, 2)}[dims]
    rng = np.random.default_rng(dims)
    x = rng.standard_normal(shape)
    addend = rng.standard_normal(shape) if with_addend else None
    fm = getattr(nn, "FusedBatchNorm%dd" % dims)(3, momentum=0.2).to(flow.float64)
    tm = getattr(torch.nn, "BatchNorm%dd" % dims)(3, momentum=0.2).double()
    wv, bv = rng.uniform(0.5, 1.5, 3), rng.standard_normal(3)
    fm.weight.copy_(flow.tensor(wv))
    fm.bias.copy_(flow.tensor(bv))
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(wv))
        tm.bias.copy_(torch.tensor(bv))
    fx, tx = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fa = flow.tensor(addend, requires_grad=True) if with_addend else None
    ta = torch.tensor(addend, requires_grad=True) if with_addend else None
    fy = fm(fx, fa) if with_addend else fm(fx)
    ty = torch.relu(tm(tx) + ta) if with_addend else torch.relu(tm(tx))
    np.testing.assert_allclose(fy.numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fm.running_mean.numpy(), tm.running_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(fm.running_var.numpy(), tm.running_var.numpy(), rtol=1e-12)
    g = rng.standard_normal(shape)
    (fy * flow.tensor(g)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fm.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-9, atol=1e-12)
    if with_addend:
        np.testing.assert_allclose(fa.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    fm.eval()
    tm.eval()
    np.testing.assert_allclose(fm(flow.tensor(x)).numpy(), torch.relu(tm(torch.tensor(x))).detach().numpy(),
                               rtol=1e-10, atol=1e-12)
    assert sorted(dict(fm.named_buffers())) == ["running_mean", "running_var"]  # no num_batches_tracked


def test_fused_batch_norm_repr_global_graph_and_errors():
    m = nn.FusedBatchNorm2d(4)
    assert repr(m) == "FusedBatchNorm2d(num_features=4, eps=1e-05, momentum=0.1, affine=True, " \
                      "track_running_stats=True)"
    x = np.random.default_rng(3).standard_normal((4, 4, 3, 3)).astype(np.float32)
    local = nn.FusedBatchNorm2d(4)(flow.tensor(x), flow.tensor(x))
    gm = nn.FusedBatchNorm2d(4).to_global(placement=P0, sbp=flow.sbp.broadcast)
    gx = flow.tensor(x).to_global(placement=P0, sbp=flow.sbp.split(0))
    gy = gm(gx, gx)
    assert gy.is_global
    np.testing.assert_allclose(gy.numpy(), local.numpy(), rtol=1e-5, atol=1e-6)

    net = nn.FusedBatchNorm2d(4)

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.net = net

        def build(self, a, b):
            return self.net(a, b)

    np.testing.assert_allclose(G()(flow.tensor(x), flow.tensor(x)).numpy(), local.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.running_mean.numpy(), 0.1 * x.mean((0, 2, 3)), rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match=r"^expected 4D input \(got 3D input\)$"):
        m(flow.ones(2, 4, 3))
    with pytest.raises(RuntimeError, match="^Must have moving_mean and moving_variance in eval mode.$"):
        flow._C.normalization_add_relu(flow.ones(2, 4), None, None, None, flow.ones(4), flow.zeros(4))


# --- orthogonal_ --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 5), (6, 4), (4, 2, 3)])
def test_orthogonal_fills_a_semi_orthogonal_matrix_in_place(shape):
    flow.manual_seed(0)
    w = flow.empty(*shape)
    out = nn.init.orthogonal_(w, gain=2.0)
    assert out is w
    q = w.numpy().reshape(shape[0], -1)
    rows, cols = q.shape
    if rows <= cols:
        np.testing.assert_allclose(q @ q.T, 4.0 * np.eye(rows), atol=1e-5)
    else:
        np.testing.assert_allclose(q.T @ q, 4.0 * np.eye(cols), atol=1e-5)
    flow.manual_seed(0)
    again = nn.init.orthogonal_(flow.empty(*shape), gain=2.0)
    np.testing.assert_array_equal(again.numpy(), w.numpy())  # seeded


def test_orthogonal_global_matches_and_refuses_vectors():
    flow.manual_seed(1)
    g = nn.init.orthogonal_(flow.empty(4, 4, placement=P0, sbp=flow.sbp.split(0)))
    q = g.numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)
    with pytest.raises(ValueError, match="^Only tensors with 2 or more dimensions are supported$"):
        nn.init.orthogonal_(flow.empty(3))
