"""OneFlow 0.9's tensor functions of issue 21 (split … einsum, grid_sample) against torch on the same values,
forward and backward (float64, rtol 1e-5), plus the host-valued ones against numpy and their errors."""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.nn.functional as F

torch = pytest.importorskip("torch")


def _pair(a, requires_grad=True):
    return (flow.tensor(a, dtype=flow.float64, requires_grad=requires_grad),
            torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad))


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(fn_flow, fn_torch, *arrays, grad=True, rtol=1e-5, atol=1e-8):
    """fn on flow and torch tensors of `arrays`: outputs equal, and the gradients of sum(out * w)."""
    pairs = [_pair(a, grad) for a in arrays]
    outs_f = _flat(fn_flow(*[p[0] for p in pairs]))
    outs_t = _flat(fn_torch(*[p[1] for p in pairs]))
    assert len(outs_f) == len(outs_t)
    rng = np.random.default_rng(0)
    loss_f, loss_t = 0, 0
    for of, ot in zip(outs_f, outs_t):
        np.testing.assert_allclose(of.numpy(), ot.detach().numpy(), rtol=rtol, atol=atol)
        assert tuple(of.shape) == tuple(ot.shape)
        if grad and ot.dtype.is_floating_point:
            w = rng.standard_normal(tuple(ot.shape))
            loss_f = loss_f + (of * flow.tensor(w, dtype=flow.float64)).sum()
            loss_t = loss_t + (ot * torch.tensor(w)).sum()
    if grad and not isinstance(loss_t, int):
        loss_f.backward()
        loss_t.backward()
        for (xf, xt) in pairs:
            want = np.zeros(xt.shape) if xt.grad is None else xt.grad.numpy()  # (torch: zeros where no path)
            got = np.zeros(want.shape) if xf.grad is None else xf.grad.numpy()
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


R = np.random.default_rng(1)
A = R.standard_normal((4, 6))
B3 = R.standard_normal((2, 3, 5))


@pytest.mark.parametrize("name, ff, ft, arrays", [
    ("split", lambda x: flow.split(x, 2, dim=1), lambda x: torch.split(x, 2, dim=1), [B3]),
    ("split sections", lambda x: x.split([1, 4], 2), lambda x: x.split([1, 4], 2), [B3]),
    ("chunk", lambda x: flow.chunk(x, 4, 1), lambda x: torch.chunk(x, 4, 1), [A]),
    ("narrow", lambda x: x.narrow(1, 1, 3), lambda x: x.narrow(1, 1, 3), [A]),
    ("unbind", lambda x: x.unbind(1), lambda x: x.unbind(1), [B3]),
    ("flip", lambda x: flow.flip(x, [0, 2]), lambda x: torch.flip(x, [0, 2]), [B3]),
    ("roll", lambda x: flow.roll(x, (2, -1), (1, 2)), lambda x: torch.roll(x, (2, -1), (1, 2)), [B3]),
    ("roll flat", lambda x: x.roll(3), lambda x: x.roll(3), [A]),
    ("rot90", lambda x: flow.rot90(x, 1, [1, 2]), lambda x: torch.rot90(x, 1, [1, 2]), [B3]),
    ("rot90 k=3", lambda x: flow.rot90(x, 3), lambda x: torch.rot90(x, 3), [A]),
    ("meshgrid ij", lambda a, b: flow.meshgrid(a, b, indexing="ij"),
     lambda a, b: torch.meshgrid(a, b, indexing="ij"), [A[0], A[1, :4]]),
    ("meshgrid xy", lambda a, b: flow.meshgrid(a, b, indexing="xy"),
     lambda a, b: torch.meshgrid(a, b, indexing="xy"), [A[0], A[1, :4]]),
    ("expand", lambda x: x[:, :1].expand(3, 4, 5), lambda x: x[:, :1].expand(3, 4, 5), [A]),
    ("expand -1", lambda x: x[:1].expand(-1, 6).expand(2, 4, -1), lambda x: x[:1].expand(-1, 6).expand(2, 4, -1),
     [A]),
    ("repeat", lambda x: x.repeat(2, 1, 3), lambda x: x.repeat(2, 1, 3), [A]),
    ("tile", lambda x: flow.tile(x, (2,)), lambda x: torch.tile(x, (2,)), [A]),
    ("sort", lambda x: flow.sort(x, dim=0), lambda x: torch.sort(x, dim=0), [A]),
    ("sort desc", lambda x: x.sort(descending=True), lambda x: x.sort(descending=True), [B3]),
    ("argsort", lambda x: flow.argsort(x, 1), lambda x: torch.argsort(x, 1), [A]),
    ("topk", lambda x: flow.topk(x, 3, dim=1), lambda x: torch.topk(x, 3, dim=1), [A]),
    ("topk smallest", lambda x: x.topk(2, 0, largest=False), lambda x: x.topk(2, 0, largest=False), [B3]),
    ("index_select", lambda x: flow.index_select(x, 1, flow.tensor([4, 0, 4])),
     lambda x: torch.index_select(x, 1, torch.tensor([4, 0, 4])), [A]),
    ("cumsum", lambda x: flow.cumsum(x, 1), lambda x: torch.cumsum(x, 1), [B3]),
    ("tril", lambda x: flow.tril(x, -1), lambda x: torch.tril(x, -1), [B3]),
    ("triu", lambda x: x.triu(2), lambda x: x.triu(2), [A]),
    ("tril wide", lambda x: x.tril(1), lambda x: x.tril(1), [A]),
    ("einsum matmul", lambda a, b: flow.einsum("ij,jk->ik", a, b), lambda a, b: torch.einsum("ij,jk->ik", a, b),
     [A, R.standard_normal((6, 3))]),
    ("einsum batch", lambda a, b: flow.einsum("bhqd,bhkd->bhqk", a, b),
     lambda a, b: torch.einsum("bhqd,bhkd->bhqk", a, b), [R.standard_normal((2, 3, 4, 5)),
                                                        R.standard_normal((2, 3, 6, 5))]),
    ("einsum implicit outer+sum", lambda a, b: flow.einsum("i,j", a, b), lambda a, b: torch.einsum("i,j", a, b),
     [A[0], A[1]]),
    ("einsum reduce", lambda a: flow.einsum("abc->ca", a), lambda a: torch.einsum("abc->ca", a), [B3]),
    ("einsum three", lambda a, b, c: flow.einsum("ij,jk,kl->il", a, b, c),
     lambda a, b, c: torch.einsum("ij,jk,kl->il", a, b, c), [A, R.standard_normal((6, 3)), R.standard_normal((3, 2))]),
    ("baddbmm", lambda i, a, b: flow.baddbmm(i, a, b, beta=0.5, alpha=2.0),
     lambda i, a, b: torch.baddbmm(i, a, b, beta=0.5, alpha=2.0),
     [R.standard_normal((2, 3, 4)), R.standard_normal((2, 3, 5)), R.standard_normal((2, 5, 4))]),
    ("addmm", lambda i, a, b: flow.addmm(i, a, b), lambda i, a, b: torch.addmm(i, a, b),
     [R.standard_normal((4,)), A, R.standard_normal((6, 4))]),
    ("normalize", lambda x: F.normalize(x, dim=1), lambda x: torch.nn.functional.normalize(x, dim=1), [B3]),
    ("normalize p1", lambda x: F.normalize(x, p=1.0, dim=-1), lambda x: torch.nn.functional.normalize(x, 1.0, -1),
     [A]),
    ("norm", lambda x: flow.norm(x), lambda x: torch.norm(x), [A]),
    ("norm dim p3", lambda x: x.norm(3, 1, True), lambda x: x.norm(3, 1, True), [A]),
    ("logsumexp", lambda x: flow.logsumexp(x, 1), lambda x: torch.logsumexp(x, 1), [B3]),
    ("diff", lambda x: flow.diff(x, n=2, dim=1), lambda x: torch.diff(x, n=2, dim=1), [A]),
    ("var_mean", lambda x: flow.var_mean(x, 1, keepdim=True), lambda x: torch.var_mean(x, 1, keepdim=True), [A]),
    ("amax", lambda x: x.amax(1), lambda x: x.amax(1), [B3]),
    ("log2", lambda x: flow.log2(x.abs() + 1), lambda x: torch.log2(x.abs() + 1), [A]),
    ("erfinv", lambda x: flow.erfinv(x * 0.3), lambda x: torch.erfinv(x * 0.3), [A]),
    ("erf", lambda x: flow.erf(x), lambda x: torch.erf(x), [A]),
    ("atan", lambda x: x.atan(), lambda x: x.atan(), [A]),
    ("asin acos", lambda x: flow.asin(x * 0.5) + flow.acos(x * 0.4), lambda x: torch.asin(x * 0.5) + torch.acos(x * 0.4),
     [A]),
    ("tanh family", lambda x: flow.sinh(x) + flow.cosh(x) + flow.asinh(x) + flow.tan(x * 0.3),
     lambda x: torch.sinh(x) + torch.cosh(x) + torch.asinh(x) + torch.tan(x * 0.3), [A]),
    ("atan2 broadcast", lambda a, b: flow.atan2(a, b), lambda a, b: torch.atan2(a, b), [A, A[:1] + 0.1]),
])
def test_matches_torch(name, ff, ft, arrays):
    check(ff, ft, *arrays)


def test_scatter_and_gather_match_torch():
    idx = np.array([[0, 3, 1], [2, 0, 5], [4, 4, 4], [1, 2, 3]])
    src = R.standard_normal((4, 5))
    check(lambda x, s: flow.scatter(x, 1, flow.tensor(idx[:, :2]), s),
          lambda x, s: torch.scatter(x, 1, torch.tensor(idx[:, :2]), s), A, src[:, :2])
    check(lambda x, s: x.scatter_add(1, flow.tensor(idx), s),
          lambda x, s: x.scatter_add(1, torch.tensor(idx), s), A, src[:, :3])
    # a src larger than index: its unread entries get no gradient (torch refuses this gradient; numpy reference)
    x, s = flow.tensor(A, requires_grad=True), flow.tensor(src, requires_grad=True)
    flow.scatter_add(x, 1, flow.tensor(idx), s).sum().backward()
    want = np.zeros_like(src)
    want[:, :3] = 1
    np.testing.assert_array_equal(s.grad.numpy(), want)
    ref = A.copy()
    for i in range(4):
        for j in range(3):
            ref[i, idx[i, j]] += src[i, j]
    np.testing.assert_allclose(flow.scatter_add(flow.tensor(A), 1, flow.tensor(idx), flow.tensor(src)).numpy(), ref)
    check(lambda x: x.scatter(0, flow.tensor([[1, 0, 3, 2, 0, 1]]), 7.5),
          lambda x: x.scatter(0, torch.tensor([[1, 0, 3, 2, 0, 1]]), 7.5), A)
    check(lambda x: flow.gather(x, 0, flow.tensor(idx[:, :2] % 4)),
          lambda x: torch.gather(x, 0, torch.tensor(idx[:, :2] % 4)), A[:, :2])


def test_masked_select_and_index_functions():
    x = np.array([[1.0, -2.0, 0.0], [3.0, 0.0, -1.0]])
    mask = x > 0
    check(lambda t: flow.masked_select(t, flow.tensor(mask)), lambda t: torch.masked_select(t, torch.tensor(mask)), x)
    check(lambda t: t.masked_select(flow.tensor([True, False, True])),
          lambda t: t.masked_select(torch.tensor([True, False, True])), x)
    t = flow.tensor(x)
    np.testing.assert_array_equal(flow.argwhere(t).numpy(), np.argwhere(x))
    np.testing.assert_array_equal(flow.nonzero(t).numpy(), np.argwhere(x))
    assert [a.numpy().tolist() for a in flow.nonzero(t, as_tuple=True)] == [list(a) for a in np.nonzero(x)]
    assert flow.argwhere(t).dtype == flow.int32  # OneFlow 0.9 (nn/modules/argwhere.py): dtype=flow.int32
    assert flow.argwhere(t, dtype=flow.int64).dtype == flow.int64 and flow.nonzero(t).dtype == flow.int64
    vals, inv, counts = flow.unique(flow.tensor([3, 1, 3, 2]), return_inverse=True, return_counts=True)
    assert vals.numpy().tolist() == [1, 2, 3] and inv.numpy().tolist() == [2, 0, 2, 1]
    assert counts.numpy().tolist() == [1, 1, 2]


def test_checks_and_logic():
    x = flow.tensor([1.0, float("nan"), float("inf"), -float("inf")])
    assert flow.isnan(x).numpy().tolist() == [False, True, False, False]
    assert x.isinf().numpy().tolist() == [False, False, True, True]
    assert flow.isfinite(x).numpy().tolist() == [True, False, False, False]
    assert flow.isnan(x).dtype == flow.bool
    assert flow.any(flow.isnan(x)).item() is True and bool(flow.all(flow.isnan(x))) is False
    a, b = flow.tensor([True, True, False]), flow.tensor([True, False, False])
    assert flow.logical_and(a, b).numpy().tolist() == [True, False, False]
    assert flow.logical_or(a, b).numpy().tolist() == [True, True, False]
    assert flow.floor_divide(flow.tensor([7, -7]), 2).numpy().tolist() == [3, -4]
    assert flow.floor_divide(flow.tensor([7, -7]), 2).dtype == flow.int64
    assert flow.is_floating_point(flow.ones(2)) and not flow.tensor([1]).is_floating_point()
    assert flow.get_default_dtype() == flow.float32
    assert flow.LongTensor([1, 2]).dtype == flow.int64 and tuple(flow.FloatTensor(2, 3).shape) == (2, 3)


def test_new_tensor_methods_and_inplace_init():
    x = flow.ones(2, 3, dtype=flow.float64)
    z = x.new_zeros((4, 1))
    assert tuple(z.shape) == (4, 1) and z.dtype == flow.float64 and float(z.sum()) == 0
    assert x.new_full((2,), 5.0).numpy().tolist() == [5.0, 5.0]
    assert x.new_ones(3).numpy().tolist() == [1.0, 1.0, 1.0]
    assert x.element_size() == 8
    w = flow.empty(1000)
    w.uniform_(-0.5, 0.5)
    assert -0.5 <= float(w.min()) and float(w.max()) < 0.5 and float(w.std()) > 0.2
    w.normal_(0.0, 0.01)
    assert abs(float(w.std()) - 0.01) < 0.002
    flow.nn.init.trunc_normal_(w, std=5.0)
    assert float(w.max()) <= 2.0 and float(w.min()) >= -2.0


def test_bernoulli_draws_zeros_and_ones_at_the_rates():
    flow.manual_seed(0)
    p = flow.tensor([0.0, 1.0] + [0.3] * 4000)
    out = flow.bernoulli(p)
    v = out.numpy()
    assert v[0] == 0 and v[1] == 1 and set(np.unique(v)) <= {0.0, 1.0}
    assert abs(v[2:].mean() - 0.3) < 0.03


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch(mode, padding_mode, align_corners):
    img = R.standard_normal((2, 3, 5, 6))
    # positions inside and well outside [-1, 1], away from pixel edges (the kinks of floor)
    grid = R.uniform(-1.6, 1.6, (2, 4, 7, 2))
    check(lambda i, g: F.grid_sample(i, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners),
          lambda i, g: torch.nn.functional.grid_sample(i, g, mode=mode, padding_mode=padding_mode,
                                                       align_corners=align_corners), img, grid)


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(align_corners):
    theta = R.standard_normal((2, 2, 3))
    check(lambda t: F.affine_grid(t, [2, 3, 4, 5], align_corners=align_corners),
          lambda t: torch.nn.functional.affine_grid(t, [2, 3, 4, 5], align_corners=align_corners), theta)


def test_errors_name_what_was_wrong():
    x = flow.ones(4, 6)
    with pytest.raises(RuntimeError, match="split_sizes to sum exactly to 6 "):  # OneFlow 0.9's words
        flow.split(x, [2, 2], 1)
    with pytest.raises(RuntimeError, match="must match the existing size"):
        x.expand(4, 5)
    with pytest.raises(RuntimeError, match="can not be smaller"):
        x.repeat(2)
    with pytest.raises(RuntimeError, match="subscript i is repeated for operand 0 but the sizes don't match, 4 != 6"):
        flow.einsum("ii->i", x)
    with pytest.raises(IndexError, match="Dimension out of range"):
        flow.cumsum(x, 3)
    with pytest.raises(ValueError, match="must have as many dims"):
        flow.scatter(x, 1, flow.tensor([0, 1]), 1.0)


def test_value_shaped_functions_are_refused_inside_a_graph():
    class G(flow.nn.Graph):
        def build(self, x):
            return flow.masked_select(x, x > 0)

    with pytest.raises(RuntimeError, match="masked_select.*nn.Graph"):
        G()(flow.ones(3))


def test_functions_run_in_nn_graph_as_eagerly():
    a = flow.tensor(A)

    def f(x):
        s = flow.sort(x, 1).values
        return flow.cat([flow.flip(s, [0]), flow.cumsum(x, 0), flow.tril(x), x.repeat(1, 1)[:, :6],
                         flow.roll(x, 1, 1), flow.einsum("ij,kj->ik", x, x)[:, :4].repeat(1, 2)[:, :6]], 0)

    class G(flow.nn.Graph):
        def build(self, x):
            return f(x)

    np.testing.assert_allclose(G()(a).numpy(), f(a).numpy(), rtol=1e-6)


def test_reshape_takes_oneflow_shape_keyword():
    x = flow.arange(6)
    assert tuple(flow.reshape(x, shape=(2, 3)).shape) == (2, 3)  # flowvision's read of MNIST files
    assert tuple(x.reshape(shape=[3, 2]).shape) == (3, 2)
    assert tuple(flow._C.reshape(x, shape=(1, 6)).shape) == (1, 6)
    with pytest.raises(TypeError, match="unexpected arguments"):
        flow.reshape(x, (2, 3), shape=(3, 2))
