"""api-misc1: names OneFlow 0.9's python/oneflow/__init__.py and nn/init.py export beyond the reference pages:
the top-level in-place functions (clamp_, clamp_min_, clamp_max_, clip_, div_, erfinv_, masked_fill_, zero_),
contiguous, to_global / to_local, finfo / iinfo, logaddexp, quantile, softshrink / threshold, stft, new_empty /
new_full / new_zeros, roi_align, tensor_buffer_to_list_of_tensors, nn.init.eye_ / calc_fan / get_data_format.
Numbers against numpy written here or torch, gradients, global tensors (one rank, and two simulated ranks), an
nn.Graph, and the exact errors."""
import math

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.nn.functional as nnF
from simulated_ranks import on_ranks

try:
    import torch
except ImportError:  # the torch comparisons skip; the numpy ones run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

RNG = np.random.RandomState(11)
A = RNG.randn(3, 5).astype(np.float32)


def _p0():
    return flow.placement("cpu", ranks=[0])


# --- in-place functions -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,args,want", [
    ("clamp_", (-0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5)),
    ("clip_", (None, 0.2), lambda a: np.minimum(a, 0.2)),
    ("clamp_min_", (0.1,), lambda a: np.maximum(a, 0.1)),
    ("clamp_max_", (-0.1,), lambda a: np.minimum(a, -0.1)),
    ("div_", (4.0,), lambda a: a / 4.0),
    ("erfinv_", (), None),
    ("zero_", (), lambda a: np.zeros_like(a)),
])
def test_in_place_functions_update_their_argument_as_the_methods(name, args, want):
    a = np.tanh(A)  # (erfinv's domain)
    x = flow.tensor(a)
    out = getattr(flow, name)(x, *args)
    assert out is x
    if want is None:  # erfinv: erf of the result gives the input back
        np.testing.assert_allclose(np.vectorize(math.erf)(x.numpy()), a, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_allclose(x.numpy(), want(a), rtol=1e-6)
    y = flow.tensor(a)
    getattr(y, name)(*args)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_in_place_aliases_and_functional_bindings():
    assert flow.clip_ is flow.clamp_
    for name in ("clamp_", "clamp_min_", "clamp_max_", "clip_", "div_", "erfinv_", "masked_fill_", "contiguous",
                 "logaddexp", "stft", "roi_align", "finfo", "iinfo"):
        assert getattr(flow._C, name) is getattr(flow, name), name
    assert flow.softshrink is nnF.softshrink and flow.threshold is nnF.threshold
    assert flow._C.eye_ is flow.nn.init.eye_
    assert flow.Tensor.clamp_min_ is flow.clamp_min_ and flow.Tensor.clamp_max_ is flow.clamp_max_


def test_masked_fill_and_div_by_a_tensor_in_place_with_gradients():
    x = flow.tensor(A, requires_grad=True)
    y = x * 2
    flow.masked_fill_(y, flow.tensor(A > 0), 7.0)
    flow.div_(y, flow.tensor(np.full((1, 5), 4.0, np.float32)))
    y.sum().backward()
    np.testing.assert_allclose(y.numpy(), np.where(A > 0, 7.0, 2 * A) / 4.0, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), np.where(A > 0, 0.0, 0.5), rtol=1e-6)
    z = x * 1
    flow.clamp_(z, -0.3, 0.3)
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(A > 0, 0.0, 0.5) + (np.abs(A) < 0.3), rtol=1e-6)


def test_contiguous_to_global_and_to_local():
    x = flow.tensor(A)
    assert flow.contiguous(x) is x
    g = flow.to_global(x, placement=_p0(), sbp=flow.sbp.split(0))
    assert g.is_global and g.sbp == (flow.sbp.split(0),)
    b = flow.to_global(g, sbp=flow.sbp.broadcast)
    assert b.placement == _p0() and b.sbp == (flow.sbp.broadcast,)
    np.testing.assert_array_equal(flow.to_local(b).numpy(), A)
    assert flow.to_local(b).is_local
    with pytest.raises(AssertionError, match=r"^Expected global tensor for to_local but got local tensor!$"):
        flow.to_local(x)
    with pytest.raises(ValueError, match=r"^Converting a local tensor to global tensor must have placement and sbp "
                                         r"parameters\.$"):
        flow.to_global(x, placement=_p0())
    with pytest.raises(TypeError, match=r"^clamp_\(\): argument 'input' must be Tensor, not list$"):
        flow.clamp_([1.0], 0, 1)


def test_in_place_functions_on_a_global_tensor():
    x = flow.tensor(A).to_global(placement=_p0(), sbp=flow.sbp.split(1))
    flow.clamp_(x, -0.5, 0.5)
    flow.masked_fill_(x, x > 0.4, 1.0)
    np.testing.assert_allclose(x.numpy(), np.where(np.clip(A, -0.5, 0.5) > 0.4, 1.0, np.clip(A, -0.5, 0.5)))
    assert x.is_global and x.sbp == (flow.sbp.split(1),)
    flow.zero_(x)
    assert not x.numpy().any()


# --- new_zeros / new_full / new_empty ---------------------------------------------------------------------------------
def test_new_constants_take_the_inputs_dtype_and_layout():
    x = flow.tensor(np.ones((2, 3)), dtype=flow.float64)
    z = flow.new_zeros(x)
    assert tuple(z.shape) == (2, 3) and z.dtype is flow.float64 and not z.numpy().any()
    assert tuple(flow.new_zeros(x, (4,)).shape) == (4,)
    assert tuple(flow.new_zeros(x, [1, 2]).shape) == (1, 2)
    f = flow.new_full(x, (2, 2), 3.5, dtype=flow.float32)
    assert f.dtype is flow.float32
    np.testing.assert_array_equal(f.numpy(), np.full((2, 2), 3.5))
    np.testing.assert_array_equal(flow.new_full(x, 3, flow.tensor(2.0)).numpy(), [2.0, 2.0, 2.0])
    e = flow.new_empty(x, (5, 1), requires_grad=True)
    assert tuple(e.shape) == (5, 1) and e.dtype is flow.float64 and e.requires_grad
    g = x.to_global(placement=_p0(), sbp=flow.sbp.split(0))
    for t in (flow.new_zeros(g, (4, 2)), flow.new_full(g, (4, 2), 1.0), flow.new_empty(g, (4, 2))):
        assert t.is_global and t.placement == _p0() and t.sbp == (flow.sbp.split(0),)  # the sbp is x's
    b = flow.new_full(g, (3,), 2, sbp=flow.sbp.broadcast)
    assert b.sbp == (flow.sbp.broadcast,) and b.placement == _p0()
    np.testing.assert_array_equal(b.numpy(), [2.0, 2.0, 2.0])
    with pytest.raises(AssertionError, match=r"^new_full\(\): argument 'fill_value' must be Number, not Tensor$"):
        flow.new_full(x, (2,), flow.ones(2))
    with pytest.raises(ValueError, match=r"argument 'placement' must not be None when argument 'sbp' exist and "
                                         r"Tensor is local"):
        flow.new_zeros(x, sbp=flow.sbp.broadcast)


# --- finfo / iinfo ----------------------------------------------------------------------------------------------------
def test_finfo_and_iinfo_as_type_info_rst_prints_them():
    assert repr(flow.finfo()) == ("finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, "
                                  "tiny=1.17549e-38, dtype=oneflow.float32, bits=32)")
    assert str(flow.finfo(flow.float)) == repr(flow.finfo())
    assert flow.finfo(flow.float16).bits == 16 and flow.finfo(flow.float16).max == 65504.0
    assert repr(flow.iinfo(flow.int8)) == "iinfo(min=-128, max=127, dtype=oneflow.int8, bits=8)"
    assert flow.iinfo(flow.int).max == 2147483647 and flow.iinfo(flow.int).bits == 32
    for dt in (flow.float16, flow.float32, flow.float64):
        f, n = flow.finfo(dt), np.finfo(dt.np)
        assert (f.bits, f.eps, f.max, f.min, f.tiny) == (n.bits, float(n.eps), float(n.max), float(n.min),
                                                         float(n.tiny))
        assert f.resolution == 10.0 ** -n.precision and f.dtype == dt.name
    for dt in (flow.uint8, flow.int8, flow.int32, flow.int64):
        i, n = flow.iinfo(dt), np.iinfo(dt.np)
        assert (i.bits, i.min, i.max, i.dtype) == (n.bits, int(n.min), int(n.max), dt.name)
    assert repr(flow.iinfo(flow.int64)) == ("iinfo(min=-9223372036854775808, max=9223372036854775807, "
                                            "dtype=oneflow.int64, bits=64)")
    with pytest.raises(TypeError, match=r"^oneflow\.finfo\(\) requires a float input type\. Use oneflow\.iinfo to "
                                        r"handle 'oneflow\.int32' $"):
        flow.finfo(flow.int32)
    with pytest.raises(TypeError, match=r"^oneflow\.iinfo\(\) requires an integer input type\. Use oneflow\.finfo "
                                        r"to handle 'oneflow\.float32' $"):
        flow.iinfo(flow.float32)
    with pytest.raises(TypeError, match=r"^finfo\(\): argument 'type' must be oneflow\.dtype, but found "
                                        r"<class 'str'>$"):
        flow.finfo("float32")


# --- logaddexp ---------------------------------------------------------------------------------------------------
def test_logaddexp_numbers_gradients_and_extremes():
    a, b = RNG.randn(3, 1).astype(np.float64), RNG.randn(1, 4).astype(np.float64)
    x, y = flow.tensor(a, requires_grad=True), flow.tensor(b, requires_grad=True)
    z = flow.logaddexp(x, y)
    np.testing.assert_allclose(z.numpy(), np.logaddexp(a, b), rtol=1e-12)
    z.sum().backward()
    s = 1.0 / (1.0 + np.exp(b - a))  # d/da log(e^a + e^b) = sigmoid(a - b)
    np.testing.assert_allclose(x.grad.numpy(), s.sum(1, keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(y.grad.numpy(), (1 - s).sum(0, keepdims=True), rtol=1e-10)
    big = flow.logaddexp(flow.tensor([-100.0, -200, -300, 1000.0]), flow.tensor([-1.0, -2, -3, 999.0]))
    np.testing.assert_allclose(big.numpy(), np.logaddexp([-100.0, -200, -300, 1000.0], [-1.0, -2, -3, 999.0]),
                               rtol=1e-6)
    g = flow.logaddexp(flow.tensor(a).to_global(placement=_p0(), sbp=flow.sbp.split(0)),
                       flow.tensor(b).to_global(placement=_p0(), sbp=flow.sbp.broadcast))
    assert g.is_global
    np.testing.assert_allclose(g.numpy(), np.logaddexp(a, b), rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"^logaddexp do not support 0-size tensor\.$"):
        flow.logaddexp(flow.ones(0), flow.ones(1))


# --- quantile ----------------------------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_matches_torch_with_every_interpolation(interpolation):
    a = RNG.randn(4, 6, 5)
    qv = np.array([0.0, 0.2, 0.5, 0.9, 1.0])
    for dim in (None, 0, 1, -1):
        for keepdim in (False, True):
            for q, tq in ((0.3, 0.3), (0.5, 0.5), (flow.tensor(qv), torch.tensor(qv))):
                got = flow.quantile(flow.tensor(a), q, dim=dim, keepdim=keepdim, interpolation=interpolation)
                want = torch.quantile(torch.tensor(a), tq, dim=dim, keepdim=keepdim, interpolation=interpolation)
                assert tuple(got.shape) == tuple(want.shape), (dim, keepdim, q)
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


@needs_torch
def test_quantile_gradient_and_oneflows_float64_result():
    a = RNG.randn(3, 7).astype(np.float32)
    x = flow.tensor(a, requires_grad=True)
    out = flow.quantile(x, 0.6, dim=1, interpolation="linear")
    assert out.dtype is flow.float64  # (OneFlow 0.9's QuantileFunctor: its float64 weights promote)
    (out * flow.tensor([1.0, 2.0, 3.0], dtype=flow.float64)).sum().backward()
    t = torch.tensor(a, requires_grad=True)
    (torch.quantile(t, 0.6, dim=1) * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(out.numpy(), torch.quantile(torch.tensor(a, dtype=torch.float64), 0.6, dim=1),
                               rtol=1e-7)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"^quantile\(\) q must be in the range \[0, 1\] but got 1\.5$"):
        flow.quantile(x, 1.5)
    with pytest.raises(RuntimeError, match=r"^quantile\(\) interpolation must be one of linear, lower, higher, "
                                           r"midpoint or nearest\. Got cubic$"):
        flow.quantile(x, 0.5, interpolation="cubic")


def test_quantile_on_two_ranks_split_along_the_reduced_dim():
    a = RNG.randn(4, 6)

    def body():
        p = flow.placement("cpu", [0, 1])
        x = flow.tensor(a, placement=p, sbp=flow.sbp.split(1))
        return flow.quantile(x, 0.25, dim=1).numpy(), flow.quantile(x, 0.5, dim=0, keepdim=True).numpy()

    for r1, r0 in on_ranks(2, body):
        np.testing.assert_allclose(r1, np.quantile(a, 0.25, axis=1), rtol=1e-12)
        np.testing.assert_allclose(r0, np.quantile(a, 0.5, axis=0, keepdims=True), rtol=1e-12)


# --- stft ---------------------------------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("shape,kw", [
    ((40,), dict(n_fft=8)),
    ((3, 33), dict(n_fft=8, hop_length=3, center=False)),
    ((1, 20), dict(n_fft=10, win_length=6, normalized=True)),
    ((2, 24), dict(n_fft=8, onesided=False, pad_mode="constant")),
    ((2, 24), dict(n_fft=8, window="hann")),
    ((30,), dict(n_fft=8, win_length=5, window="hann", hop_length=2)),
])
def test_stft_is_torchs_real_view(shape, kw):
    a = RNG.randn(*shape)
    kw = dict(kw)
    wt = wf = None
    if kw.pop("window", None):
        wt = torch.hann_window(kw["win_length"] if "win_length" in kw else kw["n_fft"], dtype=torch.float64)
        wf = flow.tensor(wt.numpy())
    x = flow.tensor(a, requires_grad=True)
    got = flow.stft(x, window=wf, **kw)
    t = torch.tensor(a, requires_grad=True)
    want = torch.view_as_real(torch.stft(t, window=wt, return_complex=True, **kw))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-10)
    weights = RNG.randn(*want.shape)
    (got * flow.tensor(weights)).sum().backward()
    (want * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-9)


def test_stft_against_numpys_fft_on_a_global_tensor_and_its_errors():
    a = RNG.randn(2, 32)
    x = flow.tensor(a).to_global(placement=_p0(), sbp=flow.sbp.split(0))
    got = flow.stft(x, 8, hop_length=4, center=False)
    frames = np.stack([a[:, i:i + 8] for i in range(0, 32 - 8 + 1, 4)], 1)  # (2, 7, 8)
    spec = np.fft.rfft(frames, axis=-1).transpose(0, 2, 1)  # (2, 5, 7)
    assert got.is_global and tuple(got.shape) == (2, 5, 7, 2)
    np.testing.assert_allclose(got.numpy(), np.stack([spec.real, spec.imag], -1), atol=1e-10)
    with pytest.raises(RuntimeError, match=r"^return_complex parameter is not supported at this time$"):
        flow.stft(flow.ones(16), 4, return_complex=True)
    with pytest.raises(RuntimeError, match=r"^Expected a 1D or 2D tensor,but got 3D$"):
        flow.stft(flow.ones(1, 2, 16), 4)
    with pytest.raises(RuntimeError, match=r"^Expected a 1D window tensor of size equal to win_length=4, but got "
                                           r"window with size \(3,\)$"):
        flow.stft(flow.ones(16), 4, window=flow.ones(3))


# --- roi_align -----------------------------------------------------------------------------------------------------
def _roi_align_reference(x, rois, scale, ph, pw, ratio, aligned):
    """torchvision's roi_align (its CPU kernel's formula), sample by sample."""
    def bilinear(img, y, xx):
        h, w = img.shape
        if y < -1.0 or y > h or xx < -1.0 or xx > w:
            return 0.0
        y, xx = max(y, 0.0), max(xx, 0.0)
        yl, xl = int(y), int(xx)
        if yl >= h - 1:
            yh = yl = h - 1
            y = float(yl)
        else:
            yh = yl + 1
        if xl >= w - 1:
            xh = xl = w - 1
            xx = float(xl)
        else:
            xh = xl + 1
        ly, lx = y - yl, xx - xl
        return ((1 - ly) * (1 - lx) * img[yl, xl] + (1 - ly) * lx * img[yl, xh] + ly * (1 - lx) * img[yh, xl]
                + ly * lx * img[yh, xh])

    out = np.zeros((len(rois), x.shape[1], ph, pw))
    off = 0.5 if aligned else 0.0
    for r, roi in enumerate(rois):
        n = int(roi[0])
        x1, y1, x2, y2 = roi[1] * scale - off, roi[2] * scale - off, roi[3] * scale - off, roi[4] * scale - off
        rh, rw = y2 - y1, x2 - x1
        if not aligned:
            rh, rw = max(rh, 1.0), max(rw, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = ratio if ratio > 0 else int(np.ceil(rh / ph))
        gw = ratio if ratio > 0 else int(np.ceil(rw / pw))
        count = max(gh * gw, 1)
        for c in range(x.shape[1]):
            for i in range(ph):
                for j in range(pw):
                    acc = 0.0
                    for iy in range(gh):
                        yy = y1 + i * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            acc += bilinear(x[n, c], yy, x1 + j * bw + (ix + 0.5) * bw / gw)
                    out[r, c, i, j] = acc / count
    return out


ROIS = np.array([[0, 0.5, 1.0, 4.2, 5.1], [1, 1.3, 0.2, 6.0, 3.7], [0, 2.0, 2.0, 2.5, 2.4],
                 [1, -1.5, -0.5, 3.0, 8.0], [0, 3.0, 1.0, 9.5, 7.5], [1, 0.0, 0.0, 0.3, 0.2]])


@pytest.mark.parametrize("scale,ratio,aligned", [(1.0, 2, True), (0.5, 0, False), (1.0, 0, True), (0.7, 3, False)])
def test_roi_align_matches_the_sample_by_sample_formula_with_its_gradient(scale, ratio, aligned):
    a = RNG.randn(2, 3, 7, 6)
    rois = ROIS * np.array([1, 1 / scale, 1 / scale, 1 / scale, 1 / scale])
    x = flow.tensor(a, requires_grad=True)
    y = flow.roi_align(x, flow.tensor(rois), scale, 3, 2, ratio, aligned)
    want = _roi_align_reference(a, rois, scale, 3, 2, ratio, aligned)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-12)
    w = RNG.randn(*want.shape)
    (y * flow.tensor(w)).sum().backward()
    # the output is linear in x: the gradient's entry k is the weighted output of the k-th unit map
    grad = np.zeros(a.size)
    for k in range(a.size):
        e = np.zeros(a.size)
        e[k] = 1.0
        grad[k] = (_roi_align_reference(e.reshape(a.shape), rois, scale, 3, 2, ratio, aligned) * w).sum()
    np.testing.assert_allclose(x.grad.numpy().reshape(-1), grad, rtol=1e-10, atol=1e-12)


def test_roi_align_on_two_ranks_with_the_regions_split():
    a = RNG.randn(2, 2, 7, 6)
    w = RNG.randn(len(ROIS), 2, 2, 2)

    def body():
        p = flow.placement("cpu", [0, 1])
        x = flow.tensor(a, placement=p, sbp=flow.sbp.broadcast, requires_grad=True)
        r = flow.tensor(ROIS, placement=p, sbp=flow.sbp.split(0))
        y = flow.roi_align(x, r, 1.0, 2, 2, 2, True)
        (y * flow.tensor(w, placement=p, sbp=flow.sbp.broadcast)).sum().backward()
        return y.numpy(), x.grad.numpy()

    xl = flow.tensor(a, requires_grad=True)
    yl = flow.roi_align(xl, flow.tensor(ROIS), 1.0, 2, 2, 2, True)
    (yl * flow.tensor(w)).sum().backward()
    for y, g in on_ranks(2, body):
        np.testing.assert_allclose(y, _roi_align_reference(a, ROIS, 1.0, 2, 2, 2, True), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g, xl.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_roi_align_errors_as_oneflow_words_them():
    with pytest.raises(RuntimeError, match=r"The dimension of x tensor must be equal to 4, but got 3"):
        flow.roi_align(flow.randn(2, 3, 64), flow.randn(2, 3, 64, 64), 2.0, 14, 14, 2, True)
    with pytest.raises(RuntimeError, match=r"The dimension of rois tensor must be equal to 2, but got 4"):
        flow.roi_align(flow.randn(2, 3, 64, 5), flow.randn(2, 3, 64, 64), 2.0, 14, 14, 2, True)
    with pytest.raises(RuntimeError, match=r"The size of rois tensor must be equal to 5 at dimension 1, but got 3"):
        flow.roi_align(flow.randn(2, 3, 64, 5), flow.randn(2, 3), 2.0, 14, 14, 2, True)


# --- tensor buffers ------------------------------------------------------------------------------------------------
def test_tensor_buffer_to_list_of_tensors_local_and_global():
    a = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    buf = flow.tensor_to_tensor_buffer(flow.tensor(a), 2)
    out = flow.tensor_buffer_to_list_of_tensors(buf, [(2, 2), (4,), (1, 4)], [flow.float32] * 3)
    assert [tuple(t.shape) for t in out] == [(2, 2), (4,), (1, 4)]
    for t, want in zip(out, (a[0], a[1].reshape(4), a[2].reshape(1, 4))):
        assert t.dtype is flow.float32
        np.testing.assert_array_equal(t.numpy(), want)
    gbuf = flow.tensor_to_tensor_buffer(flow.tensor(a).to_global(placement=_p0(), sbp=flow.sbp.broadcast), 2)
    gout = flow.tensor_buffer_to_list_of_tensors(gbuf, [(2, 2)] * 3, [flow.float32] * 3)
    assert all(t.is_global and t.sbp == (flow.sbp.broadcast,) for t in gout)
    np.testing.assert_array_equal(gout[2].numpy(), a[2])
    with pytest.raises(ValueError, match=r"^tensor_buffer_to_list_of_tensors: buffer 0 holds float32, "
                                         r"out_dtypes\[0\] is int32"):
        flow.tensor_buffer_to_list_of_tensors(buf, [(2, 2)] * 3, [flow.int32] * 3)


# --- nn.init ------------------------------------------------------------------------------------------------------
def test_init_eye_calc_fan_and_get_data_format():
    w = flow.empty(3, 5)
    assert flow.nn.init.eye_(w) is w
    np.testing.assert_array_equal(w.numpy(), np.eye(3, 5))
    g = flow.zeros(4, 2, placement=_p0(), sbp=flow.sbp.split(0))
    flow.nn.init.eye_(g)
    np.testing.assert_array_equal(g.numpy(), np.eye(4, 2))
    with pytest.raises(ValueError, match=r"^Only tensors with 2 dimensions are supported$"):
        flow.nn.init.eye_(flow.empty(2, 2, 2))
    calc = flow.nn.init.calc_fan
    assert calc((4, 3), "fan_in", "channels_first") == 3.0 and calc((4, 3), "fan_out", "") == 4.0
    assert calc((8, 3, 5, 5), "fan_in", "channels_first") == 75.0  # product of shape[1:]
    assert calc((8, 3, 5, 5), "fan_out", "channels_first") == 200.0
    assert calc((8, 5, 5, 3), "fan_out", "channels_last") == 200.0
    assert calc((8, 3, 5, 5), "fan_sum", "channels_first") == 275.0
    with pytest.raises(NotImplementedError, match=r"^Only support 'fan_in', 'fan_out' and 'fan_sum' mode$"):
        calc((8, 3), "fan_avg", "channels_first")
    assert [flow.nn.init.get_data_format(f) for f in ("NCHW", "NHWC", "")] == ["channels_first", "channels_last", ""]


# --- nn.Graph -------------------------------------------------------------------------------------------------------
def test_the_compositions_run_inside_nn_graph():
    a, b = RNG.randn(2, 24), RNG.randn(2, 24)

    def f(x, y):
        return (flow.logaddexp(x, y), flow.quantile(x, 0.3, dim=1, interpolation="midpoint"),
                flow.stft(x, 8, hop_length=4), flow.roi_align(flow.reshape(y, (1, 2, 3, 8)),
                                                              flow.tensor(ROIS[:2] * [0, 1, 1, 1, 1]),
                                                              1.0, 2, 2, 2, True))

    class G(flow.nn.Graph):
        def build(self, x, y):
            return f(x, y)

    x, y = flow.tensor(a), flow.tensor(b)
    for got, want in zip(G()(x, y), f(x, y)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_zeros_do_not_widen_a_printed_column():
    """OneFlow's tensor_str measures the width on the non-zero entries (docstr math_ops trunc / fmod examples)."""
    assert repr(flow.trunc(flow.tensor([3.4, 0.5, -0.3, -0.9]))) == "tensor([3., 0., -0., -0.], dtype=oneflow.float32)"
    assert repr(flow.tensor([0.0, 1.5, -2.25])) == "tensor([ 0.0000,  1.5000, -2.2500], dtype=oneflow.float32)"


def test_new_ones_shares_the_helper_of_new_zeros():
    g = flow.ones(4, 2, placement=_p0(), sbp=flow.sbp.split(0))
    for fn in (flow.new_ones, flow.new_zeros):
        t = fn(g, (6,), dtype=flow.float64)
        assert t.placement == _p0() and t.sbp == (flow.sbp.split(0),) and t.dtype is flow.float64
    np.testing.assert_array_equal(flow.new_ones(flow.ones(2, dtype=flow.int32)).numpy(), [1, 1])
    with pytest.raises(TypeError, match=r"^new_ones\(\): argument 'x' must be Tensor, not list$"):
        flow.new_ones([1, 2])


def test_stft_logaddexp_and_in_place_functions_on_two_ranks():
    a, b = RNG.randn(4, 24), RNG.randn(4, 24)

    def body():
        p = flow.placement("cpu", [0, 1])
        x = flow.tensor(a, placement=p, sbp=flow.sbp.split(0), requires_grad=True)
        y = flow.tensor(b, placement=p, sbp=flow.sbp.split(1))
        s = flow.stft(x, 8, hop_length=4)
        s.sum().backward()
        z = flow.logaddexp(x, y)
        flow.clamp_(z, max=1.0)
        return s.numpy(), x.grad.numpy(), z.numpy()

    xl = flow.tensor(a, requires_grad=True)
    sl = flow.stft(xl, 8, hop_length=4)
    sl.sum().backward()
    for s, g, z in on_ranks(2, body):
        np.testing.assert_allclose(s, sl.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g, xl.grad.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(z, np.minimum(np.logaddexp(a, b), 1.0), rtol=1e-12)


def test_out_arguments_and_the_functional_quantile():
    a = np.arange(12.0).reshape(3, 4)
    o = flow.zeros(3, dtype=flow.float64)
    assert flow.quantile(flow.tensor(a), 0.5, dim=1, out=o) is o
    np.testing.assert_array_equal(o.numpy(), np.quantile(a, 0.5, axis=1))
    np.testing.assert_array_equal(flow._C.quantile(flow.tensor(a), 0.25, 1).numpy(), np.quantile(a, 0.25, axis=1))
    o2 = flow.zeros(2)
    assert flow.logaddexp(flow.tensor([0.0, 1.0]), flow.tensor([0.0, 1.0]), out=o2) is o2
    np.testing.assert_allclose(o2.numpy(), np.log(2) + np.array([0.0, 1.0]), rtol=1e-6)
