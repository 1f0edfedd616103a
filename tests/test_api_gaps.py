"""OneFlow 0.9 features this implementation used to refuse (the api-gaps team): embedding's max_norm and
scale_grad_by_freq, interpolate's 'bicubic' and 'area', 5-D grid_sample and 3-D affine_grid, pad with negative
pads, scatter(reduce='multiply'), where(condition), einsum's ellipsis and diagonals, flow.norm's full semantics.
Values and gradients against torch on the same float64 values (OneFlow's docstring examples as printed), one
global-tensor case per family (placement [0], broadcast), one nn.Graph case per family, and the exact error of what
OneFlow 0.9 refuses too."""
import math

import numpy as np
import pytest

import oneflow_compat as flow

torch = pytest.importorskip("torch")

P0 = flow.placement("cpu", [0])
B = flow.sbp.broadcast
R = np.random.default_rng(11)


def rnd(*shape):
    return R.standard_normal(shape)


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(fn_flow, fn_torch, *arrays, grad=True, glob=False, rtol=1e-6, atol=1e-9, ints=()):
    """fn on flow tensors (global on P0, broadcast, when glob) and on torch tensors of `arrays` (the positions in
    `ints` as int64, no gradient): outputs equal, and the gradients of sum(out * w) for every float input."""
    def mk_f(i, a):
        t = flow.tensor(a, dtype=flow.int64 if i in ints else flow.float64)
        if glob:
            t = t.to_global(placement=P0, sbp=B)
        if grad and i not in ints:
            t.requires_grad = True
        return t

    def mk_t(i, a):
        if i in ints:
            return torch.tensor(a, dtype=torch.int64)
        return torch.tensor(a, dtype=torch.float64, requires_grad=grad)

    fs = [mk_f(i, a) for i, a in enumerate(arrays)]
    ts = [mk_t(i, a) for i, a in enumerate(arrays)]
    outs_f, outs_t = _flat(fn_flow(*fs)), _flat(fn_torch(*ts))
    assert len(outs_f) == len(outs_t)
    rng = np.random.default_rng(0)
    loss_f = loss_t = None
    for of, ot in zip(outs_f, outs_t):
        assert of.is_global == glob
        assert tuple(of.shape) == tuple(ot.shape)
        np.testing.assert_allclose(of.numpy(), ot.detach().numpy(), rtol=rtol, atol=atol)
        if grad and ot.dtype.is_floating_point:
            w = rng.standard_normal(tuple(ot.shape))
            wf = flow.tensor(w, dtype=flow.float64)
            if glob:
                wf = wf.to_global(placement=P0, sbp=B)
            lf, lt = (of * wf).sum(), (ot * torch.tensor(w)).sum()
            loss_f, loss_t = (lf, lt) if loss_f is None else (loss_f + lf, loss_t + lt)
    if loss_f is not None:
        loss_f.backward()
        loss_t.backward()
        for i, (xf, xt) in enumerate(zip(fs, ts)):
            if i in ints:
                continue
            want = np.zeros(xt.shape) if xt.grad is None else xt.grad.numpy()
            got = np.zeros(xt.shape) if xf.grad is None else xf.grad.numpy()
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return outs_f


def graph_of(fn):
    class G(flow.nn.Graph):
        def build(self, *xs):
            return fn(*xs)

    return G()


# --- 1. embedding: max_norm (embedding_renorm_, in place) and scale_grad_by_freq ---------------------------------
EMB_CASES = [dict(max_norm=1.0), dict(max_norm=1.5, norm_type=1.0), dict(max_norm=2.0, norm_type=3.0),
             dict(scale_grad_by_freq=True), dict(scale_grad_by_freq=True, padding_idx=1, max_norm=2.0)]


@pytest.mark.parametrize("kw", EMB_CASES)
@pytest.mark.parametrize("glob", [False, True])
def test_embedding_max_norm_renormalises_the_weight_in_place_and_scale_grad_by_freq(kw, glob):
    w0 = rnd(6, 3) * 2
    idx = np.array([[1, 2, 1], [5, 1, 0]])
    fw = flow.tensor(w0, dtype=flow.float64)
    fi = flow.tensor(idx)
    if glob:
        fw, fi = fw.to_global(placement=P0, sbp=B), fi.to_global(placement=P0, sbp=B)
    fw = flow.nn.Parameter(fw)
    tw = torch.nn.Parameter(torch.tensor(w0))
    fo = flow.nn.functional.embedding(fi, fw, **kw)
    to = torch.nn.functional.embedding(torch.tensor(idx), tw, **kw)
    assert fo.is_global == glob
    np.testing.assert_allclose(fo.numpy(), to.detach().numpy(), rtol=1e-6, atol=1e-9)
    # the weight itself renormalised (rows 1, 2, 5, 0 looked up; rows 3, 4 untouched)
    np.testing.assert_allclose(fw.numpy(), tw.detach().numpy(), rtol=1e-6, atol=1e-9)
    if "max_norm" in kw:
        norms = np.linalg.norm(fw.numpy(), ord=kw.get("norm_type", 2.0), axis=1)
        assert (norms[[0, 1, 2, 5]] <= kw["max_norm"] + 1e-6).all()
        np.testing.assert_array_equal(fw.numpy()[[3, 4]], w0[[3, 4]])
    g = rnd(*to.shape)
    (fo * flow.tensor(g).to_global(placement=P0, sbp=B) if glob else fo * flow.tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=1e-6, atol=1e-9)


def test_embedding_module_in_a_graph_renormalises_its_weight():
    w0 = (rnd(6, 3) * 3).astype(np.float32)
    m = flow.nn.Embedding(6, 3, max_norm=1.0, scale_grad_by_freq=True, _weight=flow.tensor(w0))
    tm = torch.nn.Embedding(6, 3, max_norm=1.0, scale_grad_by_freq=True, _weight=torch.tensor(w0))
    assert repr(m) == "Embedding(6, 3, max_norm=1.0, scale_grad_by_freq=True)"

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m

        def build(self, i):
            return self.m(i)

    idx = np.array([0, 2, 2, 4])
    out = G()(flow.tensor(idx))
    want = tm(torch.tensor(idx))
    np.testing.assert_allclose(out.numpy(), want.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(m.weight.numpy(), tm.weight.detach().numpy(), rtol=1e-6)
    np.testing.assert_array_equal(m.weight.numpy()[[1, 3, 5]], w0[[1, 3, 5]])


def test_embedding_sparse_is_refused_as_oneflow_refuses_it():
    with pytest.raises(AssertionError, match="Not support sparse=True yet!"):
        flow.nn.functional.embedding(flow.tensor([0]), flow.ones(3, 2), sparse=True)
    with pytest.raises(AssertionError, match="Not support sparse=True yet!"):
        flow.nn.Embedding(3, 2, sparse=True)
    with pytest.raises(TypeError, match="embedding_renorm '.*': indices must be integers, got float32"):
        flow._C.embedding_renorm_(flow.ones(3, 2), flow.ones(2), 1.0, 2.0)


def test_embedding_C_forms():
    w = flow.nn.Parameter(flow.tensor(rnd(5, 2) * 3))
    flow._C.embedding_renorm_(w, flow.tensor([1, 3]), 0.5, 2.0)
    norms = np.linalg.norm(w.numpy(), axis=1)
    np.testing.assert_allclose(norms[[1, 3]], 0.5 * norms[[1, 3]] / (norms[[1, 3]] + 1e-7) * (1 + 1e-7 / norms[[1, 3]]),
                               rtol=1e-6)
    out = flow._C.embedding(w, flow.tensor([1, 1, 2]), None, True)
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy()[[1, 2, 0]], np.ones((3, 2)) * [[1], [1], [0]])


# --- 2. interpolate: bicubic and area ----------------------------------------------------------------------------
INTERP = [((2, 3, 5, 6), dict(size=(7, 9), mode="bicubic", align_corners=False)),
          ((2, 3, 5, 6), dict(size=(7, 9), mode="bicubic", align_corners=True)),
          ((2, 3, 5, 6), dict(scale_factor=1.7, mode="bicubic")),
          ((2, 3, 8, 6), dict(size=(3, 4), mode="bicubic", align_corners=True)),
          ((2, 3, 5, 6), dict(scale_factor=0.6, mode="bicubic")),
          ((2, 3, 7), dict(size=4, mode="area")),
          ((2, 3, 5, 6), dict(scale_factor=0.5, mode="area")),
          ((2, 3, 5, 6), dict(size=(7, 4), mode="area")),
          ((1, 2, 4, 5, 6), dict(scale_factor=(0.5, 1.5, 0.7), mode="area"))]


@pytest.mark.parametrize("shape,kw", INTERP)
def test_interpolate_bicubic_and_area_match_torch(shape, kw):
    check(lambda x: flow.nn.functional.interpolate(x, **kw), lambda x: torch.nn.functional.interpolate(x, **kw),
          rnd(*shape))


def test_interpolate_bicubic_and_area_global_graph_and_modules():
    a = rnd(2, 3, 4, 5)
    check(lambda x: flow.nn.functional.interpolate(x, scale_factor=2, mode="bicubic", align_corners=True),
          lambda x: torch.nn.functional.interpolate(x, scale_factor=2, mode="bicubic", align_corners=True), a,
          glob=True)
    check(lambda x: flow.nn.functional.interpolate(x, size=(3, 2), mode="area"),
          lambda x: torch.nn.functional.interpolate(x, size=(3, 2), mode="area"), a, glob=True)
    up = flow.nn.Upsample(scale_factor=2, mode="bicubic")
    assert repr(up) == "Upsample(scale_factor=2, mode=bicubic)"
    out = graph_of(up)(flow.tensor(a))
    want = torch.nn.Upsample(scale_factor=2, mode="bicubic")(torch.tensor(a))
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    out = graph_of(lambda x: flow.nn.functional.interpolate(x, scale_factor=0.5, mode="area"))(flow.tensor(a))
    np.testing.assert_allclose(out.numpy(), torch.nn.functional.interpolate(torch.tensor(a), scale_factor=0.5,
                                                                            mode="area").numpy(), rtol=1e-6)
    # _C.upsample_bicubic_2d: OneFlow's functional form
    out = flow._C.upsample_bicubic_2d(flow.tensor(a), output_size=(6, 7), align_corners=False)
    np.testing.assert_allclose(out.numpy(), torch.nn.functional.interpolate(
        torch.tensor(a), size=(6, 7), mode="bicubic", align_corners=False).numpy(), rtol=1e-6, atol=1e-9)


def test_interpolate_errors_are_oneflows():
    x = flow.ones(1, 1, 4, 4)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        flow.nn.functional.interpolate(x, size=2, mode="area", align_corners=True)
    with pytest.raises(NotImplementedError, match=r"Only 3D, 4D and 5D input Tensors supported \(got 3D\) for the "
                                                  r"modes: nearest \| linear \| bilinear \| bicubic \| trilinear \| "
                                                  r"area \(got bicubic\)"):
        flow.nn.functional.interpolate(flow.ones(1, 1, 4), size=2, mode="bicubic")
    with pytest.raises(ValueError, match='interpolation must be "nearest" or "bilinear" or "linear" or "area" or '
                                         '"bicubic" or "trilinear".'):
        flow.nn.functional.interpolate(x, size=2, mode="lanczos")


# --- 3. grid_sample on volumes, affine_grid 3-D ------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_5d_matches_torch(mode, padding_mode, align_corners):
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    check(lambda x, g: flow.nn.functional.grid_sample(x, g, **kw),
          lambda x, g: torch.nn.functional.grid_sample(x, g, **kw),
          rnd(2, 3, 4, 5, 6), R.uniform(-1.3, 1.3, (2, 3, 2, 4, 3)))


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_bicubic_4d_matches_torch(padding_mode, align_corners):
    kw = dict(mode="bicubic", padding_mode=padding_mode, align_corners=align_corners)
    check(lambda x, g: flow.nn.functional.grid_sample(x, g, **kw),
          lambda x, g: torch.nn.functional.grid_sample(x, g, **kw),
          rnd(2, 3, 5, 6), R.uniform(-1.4, 1.4, (2, 4, 3, 2)), glob=padding_mode == "border", rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_3d_matches_torch_and_feeds_grid_sample(align_corners):
    check(lambda t: flow.nn.functional.affine_grid(t, [2, 3, 4, 5, 6], align_corners=align_corners),
          lambda t: torch.nn.functional.affine_grid(t, [2, 3, 4, 5, 6], align_corners=align_corners),
          rnd(2, 3, 4) * 0.6)

    def f(F, t, x):
        return F.grid_sample(x, F.affine_grid(t, [2, 3, 3, 4, 2], align_corners=align_corners),
                             align_corners=align_corners)

    check(lambda t, x: f(flow.nn.functional, t, x), lambda t, x: f(torch.nn.functional, t, x),
          rnd(2, 3, 4) * 0.6, rnd(2, 3, 4, 5, 6), glob=True)


def test_grid_sample_5d_in_a_graph_and_C_forms():
    x, g = rnd(1, 2, 3, 4, 5), R.uniform(-1, 1, (1, 2, 3, 2, 3))
    out = graph_of(lambda a, b: flow.nn.functional.grid_sample(a, b, align_corners=True))(flow.tensor(x),
                                                                                         flow.tensor(g))
    want = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), align_corners=True)
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6, atol=1e-9)
    out = flow._C.grid_sample(flow.tensor(x), flow.tensor(g), interpolation_mode="nearest", padding_mode="border",
                              align_corners=False)
    want = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), mode="nearest", padding_mode="border",
                                           align_corners=False)
    np.testing.assert_allclose(out.numpy(), want.numpy())
    th = rnd(1, 3, 4)
    np.testing.assert_allclose(flow._C.affine_grid(flow.tensor(th), size=[1, 1, 2, 3, 4], align_corners=False).numpy(),
                               torch.nn.functional.affine_grid(torch.tensor(th), [1, 1, 2, 3, 4],
                                                               align_corners=False).numpy(), rtol=1e-6)


def test_grid_sample_and_affine_grid_errors_are_oneflows():
    with pytest.raises(RuntimeError, match="^Grid and input MUST have same dimention$"):
        flow.nn.functional.grid_sample(flow.ones(1, 1, 2, 2, 2), flow.ones(1, 2, 2, 2))
    with pytest.raises(RuntimeError, match=r"^Grid shape MUST \(N, H_out, W_out, 3\)$"):
        flow.nn.functional.grid_sample(flow.ones(1, 1, 2, 2, 2), flow.ones(1, 2, 2, 2, 2))
    with pytest.raises(RuntimeError, match="^Mode='bicubic' supports only 4-D input$"):
        flow.nn.functional.grid_sample(flow.ones(1, 1, 2, 2, 2), flow.ones(1, 2, 2, 2, 3), mode="bicubic")
    with pytest.raises(RuntimeError, match=r"^Theta shape  MUST be \(N, 2, 3\) or \(N, 3, 4\)$"):
        flow.nn.functional.affine_grid(flow.ones(1, 3, 3), [1, 1, 2, 2, 2])
    with pytest.raises(RuntimeError, match="^Dimension of size MUST be 4, when 3d affine grid$"):
        flow.nn.functional.affine_grid(flow.ones(1, 3, 4), [1, 1, 2, 2])


# --- 4. pad: negative pads crop ----------------------------------------------------------------------------------
PADS = [((2, 3, 5, 6), (-1, 2, 1, -2), "constant"), ((2, 3, 5, 6), (-1, -2, 0, 0, 1, -1), "constant"),
        ((2, 3, 6), (-2, 1), "reflect"), ((3, 5, 6), (1, -2, -1, 2), "reflect"), ((2, 3, 6), (-2, 3), "replicate"),
        ((2, 3, 5, 6), (-1, 2, 2, -3), "replicate"), ((5, 6), (2, -1), "replicate")]


@pytest.mark.parametrize("shape,pads,mode", PADS)
def test_pad_with_negative_pads_matches_torch(shape, pads, mode):
    kw = {"value": 0.5} if mode == "constant" else {}
    check(lambda x: flow.nn.functional.pad(x, pads, mode=mode, **kw),
          lambda x: torch.nn.functional.pad(x, pads, mode=mode, **kw), rnd(*shape), glob=mode == "reflect")


def test_pad_negative_in_a_graph_and_what_oneflow_refuses():
    a = rnd(2, 3, 5)
    out = graph_of(lambda x: flow.nn.functional.pad(x, (-1, 2), mode="replicate"))(flow.tensor(a))
    np.testing.assert_allclose(out.numpy(), torch.nn.functional.pad(torch.tensor(a), (-1, 2), mode="replicate"))
    x = flow.ones(2, 3, 4)
    with pytest.raises(NotImplementedError, match="^Pad mode is circular, but only constant, reflect and replicate "
                                                  "are valid.$"):
        flow.nn.functional.pad(x, (1, 1), mode="circular")
    with pytest.raises(NotImplementedError, match="^5D reflect padding are not supported for now$"):
        flow.nn.functional.pad(flow.ones(1, 2, 3, 4, 5), (1, 1, 1, 1, 1, 1), mode="reflect")
    with pytest.raises(RuntimeError, match=r"^Padding size should be less than the corresponding input dimension, "
                                           r"but got: padding \(4, 0\) at dimension 2 of input 3$"):
        flow.nn.functional.pad(x, (4, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="^Length of pad must be even but instead it equals 3$"):
        flow.nn.functional.pad(x, (1, 1, 1))


# --- 5. scatter multiply, where(condition), div rounding_mode ------------------------------------------------------
@pytest.mark.parametrize("glob", [False, True])
def test_scatter_multiply_matches_torch_scatter_reduce_prod(glob):
    idx = np.array([[0, 0, 2], [1, 0, 1]])
    src = rnd(2, 4)
    src[1, 1] = 0.0  # a zero in src: the other factors' gradient stays exact
    check(lambda x, i, s: flow.scatter(x, 1, i, s, reduce="multiply"),
          lambda x, i, s: torch.scatter_reduce(x, 1, i, s[:, :3], "prod"),
          rnd(2, 4), idx, src, ints=(1,), glob=glob)
    # repeated positions with zeros among the factors: the gradient of each factor is the product of the others
    check(lambda x, i, s: flow.scatter(x, 1, i, s, reduce="multiply"),
          lambda x, i, s: torch.scatter_reduce(x, 1, i, s, "prod"),
          rnd(2, 3), np.array([[0, 0, 0, 1], [2, 2, 2, 2]]), np.array([[2.0, 0.0, 3.0, 5.0], [0.0, 1.5, 0.0, 2.0]]),
          ints=(1,), glob=glob)
    # a number as src, and Tensor.scatter_ (OneFlow's DimScatterScalar with reduce)
    x = flow.tensor([[1.0, 2.0], [3.0, 4.0]])
    x.scatter_(0, flow.tensor([[1, 0]]), 3.0, reduce="multiply")
    np.testing.assert_array_equal(x.numpy(), [[1.0, 6.0], [9.0, 4.0]])


def test_scatter_multiply_in_a_graph_and_a_bad_reduce():
    a, i, s = rnd(3, 4), np.array([[3, 1], [0, 0], [2, 2]]), rnd(3, 2)
    out = graph_of(lambda x, ix, sr: flow.scatter(x, 1, ix, sr, reduce="multiply"))(
        flow.tensor(a), flow.tensor(i), flow.tensor(s))
    want = torch.tensor(a).scatter_reduce(1, torch.tensor(i), torch.tensor(s), "prod")
    np.testing.assert_allclose(out.numpy(), want.numpy())
    with pytest.raises(RuntimeError, match="^Invalid reduce type: max$"):
        flow.scatter(flow.tensor(a), 1, flow.tensor(i), flow.tensor(s), reduce="max")


@pytest.mark.parametrize("glob", [False, True])
def test_where_with_only_a_condition_is_nonzero_as_tuple(glob):
    c = np.array([[1, 0, 2], [0, 0, 3]])
    fc = flow.tensor(c)
    if glob:
        fc = fc.to_global(placement=P0, sbp=B)
    got = flow.where(fc)
    want = torch.where(torch.tensor(c))
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want):
        assert g.dtype == flow.int64 and g.is_global == glob
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_div_rounding_mode_is_refused_as_oneflow_0_9_refuses_it():
    x = flow.tensor([7.0, -7.0])
    with pytest.raises(TypeError, match=r"^div\(\): received an invalid combination of arguments. The valid "
                                        r"signatures are:\n\t\*0: Tensor \(Tensor input, Tensor other\)"):
        flow.div(x, 2.0, rounding_mode="trunc")


# --- 6. einsum: OneFlow's docstring examples, ellipsis, diagonals ------------------------------------------------
def test_einsum_docstring_examples():
    m = flow.arange(4 * 4).reshape(4, 4).to(flow.float32)
    out = flow.einsum("ii", m)
    assert out.shape == flow.Size([]) and out.numpy() == 30.0
    np.testing.assert_array_equal(flow.einsum("ii->i", m).numpy(), [0.0, 5.0, 10.0, 15.0])
    x, y = flow.arange(5).to(flow.float32), flow.arange(4).to(flow.float32)
    np.testing.assert_array_equal(flow.einsum("i,j->ij", x, y).numpy(), np.outer(np.arange(5), np.arange(4)))
    As = flow.arange(3 * 2 * 5).reshape(3, 2, 5).to(flow.float32)
    Bs = flow.arange(3 * 5 * 4).reshape(3, 5, 4).to(flow.float32)
    assert flow.einsum("bij,bjk->bik", As, Bs).shape == flow.Size([3, 2, 4])
    assert flow.einsum("...ij->...ji", flow.randn(2, 3, 4, 5)).shape == flow.Size([2, 3, 5, 4])
    A, l, r = flow.randn(3, 5, 4), flow.randn(2, 5), flow.randn(2, 4)
    assert flow.einsum("bn,anm,bm->ba", l, A, r).shape == flow.Size([2, 3])


EINSUMS = [("bii->bi", [(2, 3, 3)]), ("...ii->...i", [(2, 4, 3, 3)]), ("b...,b...->...", [(2, 3, 4), (2, 1, 4)]),
           ("...", [(2, 3)]), ("i...i", [(3, 2, 3)]), ("iij,jk", [(3, 3, 4), (4, 2)]),
           ("...ij,...jk", [(5, 2, 3), (3, 4)]), ("ij...->", [(2, 3, 4)]), ("iji->j", [(3, 2, 3)])]


@pytest.mark.parametrize("eq,shapes", EINSUMS)
def test_einsum_ellipsis_and_diagonals_match_torch(eq, shapes):
    check(lambda *xs: flow.einsum(eq, *xs), lambda *xs: torch.einsum(eq, *xs), *[rnd(*s) for s in shapes])


def test_einsum_global_graph_and_errors():
    check(lambda a, b: flow.einsum("...ii,...i->...", a, b), lambda a, b: torch.einsum("...ii,...i->...", a, b),
          rnd(2, 3, 3), rnd(3), glob=True)
    a = rnd(2, 4, 4)
    out = graph_of(lambda x: flow.einsum("bii->b", x))(flow.tensor(a))
    np.testing.assert_allclose(out.numpy(), np.trace(a, axis1=1, axis2=2))
    with pytest.raises(RuntimeError, match="subscript i is repeated for operand 0 but the sizes don't match, 2 != 3"):
        flow.einsum("ii", flow.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"found more than one ellipsis \('...'\)"):
        flow.einsum("......", flow.ones(2, 3))


# --- 7. flow.norm / Tensor.norm --------------------------------------------------------------------------------------
def test_norm_docstring_examples():
    a = flow.arange(9, dtype=flow.float) - 4
    b = a.reshape((3, 3))
    for got, want in [(flow.norm(a), 7.7460), (flow.norm(b), 7.7460), (flow.norm(a, float("inf")), 4.0),
                      (flow.norm(b, float("inf")), 9.0)]:
        assert got.dtype == flow.float32 and got.shape == flow.Size([])
        np.testing.assert_allclose(got.numpy(), want, atol=5e-5)
    c = flow.tensor([[1, 2, 3], [-1, 1, 4]], dtype=flow.float)
    np.testing.assert_allclose(flow.norm(c, dim=0).numpy(), [1.4142, 2.2361, 5.0000], atol=5e-5)
    np.testing.assert_allclose(flow.norm(c, dim=1).numpy(), [3.7417, 4.2426], atol=5e-5)
    np.testing.assert_allclose(flow.norm(c, p=1, dim=1).numpy(), [6.0, 6.0])
    d = flow.arange(8, dtype=flow.float).reshape(2, 2, 2)
    np.testing.assert_allclose(flow.norm(d, dim=(1, 2)).numpy(), [3.7417, 11.2250], atol=5e-5)
    np.testing.assert_allclose(flow.norm(d[0, :, :]).numpy(), 3.7417, atol=5e-5)


VECTOR_PS = [2, 1, 3, 0.5, 1.5, -1, math.inf, -math.inf, 0]


@pytest.mark.parametrize("p", VECTOR_PS)
def test_vector_norms_of_any_p_match_torch(p):
    x = rnd(7)
    if p == 0 or p >= 1:  # (a zero under a power below 1 has no finite gradient: OneFlow's pow gives NaN there)
        x[2] = 0.0
    grad = p != 0  # (the count of non-zeros has no gradient: OneFlow's comes from a comparison, as here)
    check(lambda t: flow.norm(t, p), lambda t: torch.linalg.vector_norm(t, p), x, rtol=1e-6, grad=grad)
    check(lambda t: t.norm(p, dim=1, keepdim=True), lambda t: torch.linalg.vector_norm(t, p, dim=1, keepdim=True),
          rnd(3, 4) + 0.1, rtol=1e-6, grad=grad)


@pytest.mark.parametrize("p", ["fro", math.inf, -math.inf, 1, -1])
def test_matrix_norms_match_torch(p):
    check(lambda t: flow.norm(t, p), lambda t: torch.linalg.matrix_norm(t, p), rnd(3, 4))
    check(lambda t: flow.norm(t, p, dim=(2, 0)), lambda t: torch.linalg.matrix_norm(t, p, dim=(2, 0)), rnd(3, 2, 4))


def test_norm_of_an_integer_p_of_at_least_2_is_entrywise_on_a_matrix():
    # OneFlow's for_norm path (math_functor.cpp NormFunctor): sum(|x|^p)^(1/p) over every entry
    check(lambda t: flow.norm(t, 2), lambda t: torch.sum(torch.abs(t) ** 2) ** 0.5, rnd(3, 4))
    check(lambda t: t.norm(-3), lambda t: torch.sum(torch.abs(t) ** -3) ** (-1 / 3), rnd(3, 4))


def test_norm_global_graph_and_what_oneflow_refuses():
    check(lambda t: flow.norm(t, math.inf), lambda t: torch.linalg.matrix_norm(t, math.inf), rnd(3, 4), glob=True)
    check(lambda t: flow.norm(t, 0.5, dim=0), lambda t: torch.linalg.vector_norm(t, 0.5, dim=0), rnd(3, 4) + 0.1,
          glob=True)
    a = rnd(3, 4)
    out = graph_of(lambda t: flow.norm(t, -1))(flow.tensor(a))
    np.testing.assert_allclose(out.numpy(), np.linalg.norm(a, -1))
    with pytest.raises(NotImplementedError, match=r"^linalg.matrix_norm\(\): Not support ord is nuc.$"):
        flow.norm(flow.tensor(a), "nuc")
    with pytest.raises(NotImplementedError, match=r"^linalg.matrix_norm\(\): Only support INFINITY,-INFINITY,1 or "
                                                  r"-1 data type.$"):
        flow.norm(flow.tensor(a), 2.0)
    with pytest.raises(RuntimeError, match=r"^linalg.norm\(\): input must be 1-D or 2-D when dim is None and ord is "
                                           r"not None$"):
        flow.norm(flow.ones(2, 2, 2), 1)


def test_C_norm_for_norm_is_flow_norms_reading():
    a = rnd(3, 4)
    x = flow.tensor(a)
    np.testing.assert_allclose(flow._C.norm(x, 2, for_norm=True).numpy(), np.sqrt((a ** 2).sum()))
    np.testing.assert_allclose(flow._C.norm(x, 1, for_norm=True).numpy(), np.linalg.norm(a, 1))
    np.testing.assert_allclose(flow._C.norm(x, None, [1]).numpy(), np.linalg.norm(a, axis=1))
    with pytest.raises(NotImplementedError, match=r"^linalg.matrix_norm\(\): Only support INFINITY,-INFINITY,1 or "
                                                  r"-1 data type.$"):
        flow._C.norm(x, 2)  # (without for_norm an integer 2 on a matrix is the spectral norm, refused)


def test_embedding_max_norm_with_an_index_out_of_range_leaves_the_weight_untouched():
    w0 = rnd(4, 3) * 5
    w = flow.nn.Parameter(flow.tensor(w0))
    with pytest.raises(IndexError, match="embedding_renorm: index 4 is out of range for 4 embeddings"):
        flow.nn.functional.embedding(flow.tensor([1, 4]), w, max_norm=1.0)
    np.testing.assert_array_equal(w.numpy(), w0)
