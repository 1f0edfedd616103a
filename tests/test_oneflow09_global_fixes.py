"""What OneFlow 0.9's global module tests (two ranks) needed of the package, each against numpy or torch here:
bool global tensors gathered on a mesh, deepcopy / pickling of a global tensor (0.9's tensor_getstate), an
optimizer over a module without parameters, `add`/`sub` with a scalar and `alpha`, reshape and reductions of
tensors with a 0 dim, `Tensor.to(flow.Tensor)`, the creation functions'
0.9 names. Multi-rank bodies run on simulated ranks."""
import copy
import pickle

import numpy as np
import pytest

import oneflow_compat as flow
from simulated_ranks import on_ranks

A = np.arange(24, dtype=np.float32).reshape(4, 6) - 7


# --- bool values on a 2-D mesh (numpy() boxes them to broadcast on the mesh first) -----------------------------
def test_a_bool_global_tensor_on_a_mesh_comes_back_whole():
    def body():
        mesh = flow.placement("cpu", [[0, 1]])
        x = flow.tensor(A, placement=mesh, sbp=(flow.sbp.broadcast, flow.sbp.split(0)))
        b = x > 3
        line = flow.tensor(A, placement=flow.placement("cpu", [0, 1]), sbp=flow.sbp.split(1)) == 0
        return b.dtype, b.numpy(), (x.eq(x)).numpy(), line.numpy()

    for dtype, got, same, line in on_ranks(2, body):
        assert dtype == flow.bool
        np.testing.assert_array_equal(got, A > 3)
        assert same.dtype == np.bool_ and same.all()
        np.testing.assert_array_equal(line, A == 0)


# --- copy.deepcopy / pickle of a global tensor ---------------------------------------------------------------------
def test_deepcopy_and_pickle_of_a_global_tensor_keep_value_placement_and_sbp():
    def body():
        p = flow.placement("cpu", [0, 1])
        mesh = flow.placement("cpu", [[0, 1]])
        x = flow.tensor(A, placement=p, sbp=flow.sbp.split(1), requires_grad=True)
        y = copy.deepcopy(x)
        z = pickle.loads(pickle.dumps(flow.tensor(A, placement=mesh, sbp=(flow.sbp.broadcast, flow.sbp.split(0)))))
        return (y is x, y.numpy(), y.placement, y.sbp, y.requires_grad, y.to_local().numpy(), z.numpy(),
                z.placement, z.sbp, flow.env.get_rank())

    for same, value, pl, sbp, rg, local, zv, zpl, zsbp, rank in on_ranks(2, body):
        assert not same and not rg  # OneFlow 0.9's tensor_setstate makes a new leaf that requires no grad
        np.testing.assert_array_equal(value, A)
        assert pl == flow.placement("cpu", [0, 1]) and sbp == (flow.sbp.split(1),)
        np.testing.assert_array_equal(local, A[:, 3 * rank:3 * rank + 3])  # this rank's shard, laid out again
        np.testing.assert_array_equal(zv, A)
        assert zpl == flow.placement("cpu", [[0, 1]]) and zsbp == (flow.sbp.broadcast, flow.sbp.split(0))


def test_a_deep_copy_of_a_global_tensor_is_independent_of_it():
    def body():
        x = flow.tensor(A, placement=flow.placement("cpu", [0, 1]), sbp=flow.sbp.broadcast)
        y = copy.deepcopy(x)
        x.add_(1)
        return y.numpy(), x.numpy()

    for y, x in on_ranks(2, body):
        np.testing.assert_array_equal(y, A)
        np.testing.assert_array_equal(x, A + 1)


# --- optimizers over an iterator that yields nothing ----------------------------------------------------------------
def test_an_optimizer_over_a_module_without_parameters():
    # OneFlow 0.9 (optim/optimizer.py _parse_input_parameters): an iterator is one group, empty or not
    m = flow.nn.ReLU()
    sgd = flow.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    assert len(sgd.param_groups) == 1 and list(sgd.param_groups[0]["params"]) == []
    sgd.zero_grad()
    sgd.step()
    adam = flow.optim.Adam(iter([]), lr=0.01)
    adam.step()
    assert sgd.state_dict()["param_groups"][0]["params"] == []
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        flow.optim.SGD([], lr=0.1)  # an empty list stays an error


# --- add / sub with a scalar operand and alpha -------------------------------------------------------------------
def test_add_and_sub_scale_a_scalar_operand_by_alpha():
    torch = pytest.importorskip("torch")
    x = A[:2, :3]
    for fn in ("add", "sub"):
        for args in ((x, 2.5), (2.5, x), (x, x)):
            want = getattr(torch, fn)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args],
                                      alpha=-1.5).numpy()
            got = getattr(flow, fn)(*[flow.tensor(a) if isinstance(a, np.ndarray) else a for a in args], alpha=-1.5)
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)

    def body():
        g = flow.tensor(A, placement=flow.placement("cpu", [0, 1]), sbp=flow.sbp.split(0))
        return flow.add(g, 3, alpha=2).numpy(), flow.add(3, g, alpha=2).numpy()

    for ga, gb in on_ranks(2, body):
        np.testing.assert_allclose(ga, A + 6)
        np.testing.assert_allclose(gb, 3 + 2 * A)


# --- tensors with a 0 dim: reshape and the gradient of a reduction ----------------------------------------------
def test_reshape_and_sum_of_a_global_tensor_with_a_zero_dim():
    def body():
        x = flow.tensor(np.ones((2, 0, 4), np.float32), placement=flow.placement("cpu", [0, 1]),
                        sbp=flow.sbp.broadcast, requires_grad=True)
        y = x.sum(1)
        y.sum().backward()
        return y.numpy(), tuple(x.grad.shape), tuple(flow.reshape(x, (0, 8)).shape), tuple(x.view(4, 0).shape)

    for y, grad_shape, r1, r2 in on_ranks(2, body):
        np.testing.assert_array_equal(y, np.zeros((2, 4), np.float32))
        assert grad_shape == (2, 0, 4) and r1 == (0, 8) and r2 == (4, 0)
    with pytest.raises(ValueError, match=r"-3"):
        flow.reshape(flow.tensor(np.ones((2, 3), np.float32), placement=flow.placement("cpu", [0]),
                                 sbp=flow.sbp.broadcast), (2, -3))


# --- Tensor.to(flow.Tensor) and the creation functions' names -----------------------------------------------------
def test_to_tensor_class_is_the_tensor_and_creation_functions_carry_oneflows_names():
    w = flow.nn.Parameter(flow.ones(2))
    assert w.to(flow.Tensor) is w and w.to(flow.nn.Parameter) is w
    x = flow.ones(2)
    assert x.to(flow.Tensor) is x and x.to("cpu").dtype == flow.float32
    assert (flow.empty.__name__, flow.empty_like.__name__, flow.new_empty.__name__) == (
        "empty_op", "empty_like_op", "new_empty_op")
    assert tuple(flow.new_empty(x, (3, 1)).shape) == (3, 1) and tuple(flow.empty_like(x).shape) == (2,)


# --- pooling: a ceil_mode window longer than the padded input; MaxPool2d under ONEFLOW_ENABLE_NHWC ---------------
def test_ceil_mode_pooling_keeps_a_window_longer_than_the_padded_input():
    torch = pytest.importorskip("torch")
    x = np.random.RandomState(0).randn(1, 2, 10, 11, 12).astype(np.float32)
    # window (5 - 1) * 3 + 1 = 13 > 10 + 2: OneFlow 0.9 and torch still make one window per axis with ceil_mode
    xt, xf = torch.tensor(x, requires_grad=True), flow.tensor(x, requires_grad=True)
    yt = torch.nn.functional.max_pool3d(xt, 5, 2, 1, 3, ceil_mode=True)
    yf = flow.nn.functional.max_pool3d(xf, 5, 2, 1, 3, ceil_mode=True)
    assert tuple(yf.shape) == tuple(yt.shape) == (1, 2, 1, 1, 2)
    np.testing.assert_array_equal(yf.numpy(), yt.detach().numpy())
    yt.sum().backward()
    yf.sum().backward()
    np.testing.assert_array_equal(xf.grad.numpy(), xt.grad.numpy())
    with pytest.raises(ValueError, match=r"window 5 \(dilation 3\) larger than padded input 12"):
        flow.nn.functional.max_pool3d(flow.tensor(x), 5, 2, 1, 3, ceil_mode=False)  # torch refuses it too


def test_max_pool2d_module_takes_channels_last_under_oneflow_enable_nhwc(monkeypatch):
    torch = pytest.importorskip("torch")
    x = np.random.RandomState(1).randn(2, 9, 10, 3).astype(np.float32)
    want = torch.nn.MaxPool2d(3, 2, 1, 2, ceil_mode=True)(torch.tensor(x).permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
    monkeypatch.setenv("ONEFLOW_ENABLE_NHWC", "1")
    m = flow.nn.MaxPool2d(3, 2, 1, 2, ceil_mode=True)
    assert m.channel_pos == "channels_last"
    np.testing.assert_array_equal(m(flow.tensor(x)).numpy(), want.numpy())

    def body():
        g = flow.tensor(x, placement=flow.placement("cpu", [0, 1]), sbp=flow.sbp.split(0))
        return m(g).numpy()

    for got in on_ranks(2, body):
        np.testing.assert_array_equal(got, want.numpy())
    monkeypatch.setenv("ONEFLOW_ENABLE_NHWC", "0")
    assert flow.nn.MaxPool2d(3).channel_pos == "channels_first"


# --- create_graph=True through a to_global --------------------------------------------------------------------
def test_a_second_derivative_through_to_global():
    a = np.linspace(-2, 2, 12).astype(np.float32).reshape(4, 3)

    def body():
        p = flow.placement("cpu", [0, 1])
        x = flow.tensor(a, placement=p, sbp=flow.sbp.split(0), requires_grad=True)
        y = x.to_global(sbp=flow.sbp.broadcast)  # boxed; its backward boxes the gradient back to split(0)
        g, = flow.autograd.grad((y ** 3).sum(), x, create_graph=True)
        gg, = flow.autograd.grad(g.sum(), x)
        return g.numpy(), g.sbp, gg.numpy(), gg.sbp

    for g, g_sbp, gg, gg_sbp in on_ranks(2, body):
        np.testing.assert_allclose(g, 3 * a ** 2, rtol=1e-6)
        np.testing.assert_allclose(gg, 6 * a, rtol=1e-6)
        assert g_sbp == gg_sbp == (flow.sbp.split(0),)


# --- fill_ while gradients are recorded ---------------------------------------------------------------------------
def test_fill_cuts_the_gradient_of_the_old_content_and_passes_the_values():
    torch = pytest.importorskip("torch")
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    dy = np.linspace(0, 1, 12, dtype=np.float32).reshape(4, 3)
    xt, vt = torch.tensor(a, requires_grad=True), torch.tensor(2.5, requires_grad=True)
    yt, zt = xt + 1, xt * 2
    yt.fill_(3.0)
    zt.fill_(vt)
    ((yt + zt) * torch.tensor(dy)).sum().backward()

    def body():
        p = flow.placement("cpu", [0, 1])
        x = flow.tensor(a, placement=p, sbp=flow.sbp.split(0), requires_grad=True)
        v = flow.tensor(2.5, placement=p, sbp=flow.sbp.broadcast, requires_grad=True)
        y, z = x + 1, x * 2
        y.fill_(3.0)
        z.fill_(v)
        ((y + z) * flow.tensor(dy, placement=p, sbp=flow.sbp.broadcast)).sum().backward()
        return y.numpy(), z.numpy(), x.grad.numpy(), v.grad.numpy()

    for y, z, xg, vg in on_ranks(2, body):
        np.testing.assert_array_equal(y, yt.detach().numpy())
        np.testing.assert_array_equal(z, zt.detach().numpy())
        np.testing.assert_array_equal(xg, xt.grad.numpy())  # zeros: the old content is overwritten
        np.testing.assert_allclose(vg, vt.grad.numpy(), rtol=1e-6)
    x = flow.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but got tensor with 1 "
                                           "dimensions."):
        (x + 1).fill_(flow.ones(2, requires_grad=True))
    x.fill_(1.0)  # a leaf (a parameter being initialised): written in place, no history
    np.testing.assert_array_equal(x.numpy(), np.ones_like(a))
    assert x.is_leaf


# --- searchsorted: OneFlow's bisection, so an unsorted sequence gives its (and torch's) indices ------------------
def test_searchsorted_follows_oneflows_bisection_on_any_sequence():
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(0)
    for shape in [(8,), (3, 16), (2, 3, 8)]:
        seq, vals = rng.rand(*shape).astype(np.float32), rng.rand(*shape).astype(np.float32)
        for s in (seq, np.sort(seq, -1)):
            for right in (False, True):
                want = torch.searchsorted(torch.tensor(s), torch.tensor(vals), right=right).numpy()
                got = flow.searchsorted(flow.tensor(s), flow.tensor(vals), right=right).numpy()
                np.testing.assert_array_equal(got, want)
    seq = np.array([3, 7, 1, 9, 4, 2, 8, 5], np.float32)  # unsorted, split across the ranks below
    vals = np.array([0, 4, 1, 2, 9, 6, 3, 5], np.float32)
    want = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), out_int32=True).numpy()

    def body():
        p = flow.placement("cpu", [0, 1])
        s = flow.tensor(seq, placement=p, sbp=flow.sbp.split(0))
        v = flow.tensor(vals, placement=p, sbp=flow.sbp.split(0))
        return flow.searchsorted(s, v, out_int32=True).numpy()

    for got in on_ranks(2, body):
        np.testing.assert_array_equal(got, want)


# --- rand / randn take `size=` as OneFlow 0.9's functional_api.yaml binds them -------------------------------------
def test_rand_and_randn_take_size_as_a_keyword():
    for fn in (flow.rand, flow.randn):
        flow.manual_seed(3)
        a = fn(size=(2, 3))
        flow.manual_seed(3)
        b = fn(2, 3)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        with pytest.raises(TypeError, match=r"%s\(\) got multiple values for argument 'size'" % fn.__name__):
            fn(2, size=(2,))
        with pytest.raises(TypeError, match=r"%s\(\) got an unexpected keyword argument 'shape'" % fn.__name__):
            fn(2, shape=(2,))

    def body():
        p = flow.placement("cpu", [0, 1])
        flow.manual_seed(5)
        return tuple(flow.randn(size=(4, 2), placement=p, sbp=flow.sbp.split(0)).shape)

    assert on_ranks(2, body) == [(4, 2), (4, 2)]


# --- maximum / minimum: a tie gives each side half of the gradient ------------------------------------------------
def test_maximum_and_minimum_share_the_gradient_of_a_tie():
    torch = pytest.importorskip("torch")
    a = np.array([[1, 2, 3], [5, 5, 0]], np.float32)
    b = np.array([[1, 3, 2], [5, 4, 0]], np.float32)
    dy = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    for name in ("maximum", "minimum"):
        at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        (getattr(torch, name)(at, bt) * torch.tensor(dy)).sum().backward()

        def body():
            p = flow.placement("cpu", [0, 1])
            x = flow.tensor(a, placement=p, sbp=flow.sbp.split(1), requires_grad=True)
            y = flow.tensor(b, placement=p, sbp=flow.sbp.split(1), requires_grad=True)
            (getattr(flow, name)(x, y) * flow.tensor(dy, placement=p, sbp=flow.sbp.broadcast)).sum().backward()
            return x.grad.numpy(), y.grad.numpy()

        for xg, yg in on_ranks(2, body):
            np.testing.assert_array_equal(xg, at.grad.numpy())
            np.testing.assert_array_equal(yg, bt.grad.numpy())


# --- weight_norm(dim=-1): the norm of the whole tensor, as OneFlow 0.9 and torch -----------------------------------
def test_weight_norm_dims_as_oneflow_and_torch():
    torch = pytest.importorskip("torch")
    w = np.random.RandomState(2).randn(16, 8).astype(np.float32)
    for dim in (-2, -1, 0, 1):
        lt, lf = torch.nn.Linear(8, 16), flow.nn.Linear(8, 16)
        with torch.no_grad():
            lt.weight.copy_(torch.tensor(w))
        with flow.no_grad():
            lf.weight.copy_(flow.tensor(w))
        gt = torch.nn.utils.weight_norm(lt, dim=dim).weight_g.detach().numpy()
        gf = flow.nn.utils.weight_norm(lf, dim=dim).weight_g.numpy()
        assert gf.shape == gt.shape, (dim, gf.shape, gt.shape)
        np.testing.assert_allclose(gf, gt, rtol=1e-5)
    with pytest.raises(AssertionError, match="dim out of range"):
        flow.nn.utils.weight_norm(flow.nn.Linear(8, 16), dim=2)


# --- matmul of a matrix and a batch of matrices (OneFlow 0.9's broadcast_matmul) -----------------------------------
def test_matmul_of_a_matrix_and_a_batch():
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(4)
    a, b = rng.randn(3, 4).astype(np.float32), rng.randn(6, 4, 2).astype(np.float32)
    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    torch.matmul(at, bt).pow(2).sum().backward()

    def body():
        p = flow.placement("cpu", [0, 1])
        x = flow.tensor(a, placement=p, sbp=flow.sbp.broadcast, requires_grad=True)
        y = flow.tensor(b, placement=p, sbp=flow.sbp.split(0), requires_grad=True)
        z = x.matmul(y)
        z.pow(2).sum().backward()
        return z.numpy(), x.grad.numpy(), y.grad.numpy()

    for z, xg, yg in on_ranks(2, body):
        np.testing.assert_allclose(z, np.matmul(a, b), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(xg, at.grad.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(yg, bt.grad.numpy(), rtol=1e-4, atol=1e-5)


# --- x[slices] = value on a recorded global tensor ----------------------------------------------------------------
def test_slice_assignment_on_a_recorded_global_tensor_has_slice_updates_gradient():
    torch = pytest.importorskip("torch")
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    v = -np.ones((4, 3), np.float32)
    at, vt = torch.tensor(a, requires_grad=True), torch.tensor(v, requires_grad=True)
    xt = at * 2
    xt[:, 1:7:2] = vt
    xt[..., 0] = 5.0
    (xt * xt).sum().backward()

    def body():
        p = flow.placement("cpu", [0, 1])
        x0 = flow.tensor(a, placement=p, sbp=flow.sbp.split(0), requires_grad=True)
        val = flow.tensor(v, placement=p, sbp=flow.sbp.broadcast, requires_grad=True)
        x = x0 * 2
        x[:, 1:7:2] = val
        x[..., 0:1] = 5.0
        (x * x).sum().backward()
        return x.numpy(), x.sbp, x0.grad.numpy(), val.grad.numpy()

    for x, sbp, x0g, vg in on_ranks(2, body):
        np.testing.assert_array_equal(x, xt.detach().numpy())
        assert sbp == (flow.sbp.split(0),)
        np.testing.assert_array_equal(x0g, at.grad.numpy())
        np.testing.assert_array_equal(vg, vt.grad.numpy())


# --- var / std with no degrees of freedom: NaN --------------------------------------------------------------------
def test_var_without_degrees_of_freedom_is_nan():
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(6)
    for shape, dim, unbiased in [((3, 0, 4), 1, True), ((3, 0, 4), 1, False), ((3, 1, 4), 1, True),
                                 ((3, 2, 4), 1, True), ((3, 1, 4), 1, False)]:
        a = rng.randn(*shape).astype(np.float32)
        want = torch.var(torch.tensor(a), dim, unbiased=unbiased).numpy()
        np.testing.assert_allclose(flow.var(flow.tensor(a), dim, unbiased).numpy(), want, rtol=1e-5)
        np.testing.assert_allclose(flow.std(flow.tensor(a), dim, unbiased).numpy(),
                                   torch.std(torch.tensor(a), dim, unbiased=unbiased).numpy(), rtol=1e-5)

    def body():
        x = flow.tensor(np.ones((4, 0, 2), np.float32), placement=flow.placement("cpu", [0, 1]),
                        sbp=flow.sbp.split(0))
        return flow.var(x, 1).numpy()

    for got in on_ranks(2, body):
        assert got.shape == (4, 2) and np.isnan(got).all()


# --- oneflow.nn.graph.util is importable (OneFlow 0.9's test of global casts imports its ArgsTree) -----------------
def test_nn_graph_util_args_tree_is_importable():
    from oneflow.nn.graph.util import ArgsTree

    t = flow.ones(2)
    nodes = list(ArgsTree([t, {"k": (1, t)}]).iter_nodes())
    assert [type(n).__name__ for n in nodes] == ["list", "Tensor", "dict", "tuple", "int", "Tensor"]


def test_deepcopy_of_a_global_parameter_is_a_parameter():
    def body():
        w = flow.nn.Parameter(flow.tensor(A, placement=flow.placement("cpu", [0, 1]), sbp=flow.sbp.split(0)))
        c = copy.deepcopy(w)
        return type(c).__name__, c.requires_grad, c.sbp, c.numpy()

    for name, rg, sbp, value in on_ranks(2, body):
        assert name == "Parameter" and rg and sbp == (flow.sbp.split(0),)
        np.testing.assert_array_equal(value, A)
