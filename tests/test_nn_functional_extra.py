"""api-nn: OneFlow 0.9's nn.CosineSimilarity / PairwiseDistance and nn.functional's cosine_similarity,
pairwise_distance, gumbel_softmax, sparse_softmax_cross_entropy, upsample and deform_conv2d: values and gradients
against PyTorch or numpy written here (deform_conv2d: torchvision's bilinear formula, with central differences for
the gradients), OneFlow's docstring examples, a global case per family, errors."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn

F = flow.nn.functional
P0 = flow.placement("cpu", ranks=[0])


def _torch():
    return pytest.importorskip("torch")


# --- distances ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", [((5, 4), (5, 4), 1), ((2, 3, 4), (3, 1), -1), ((4, 6), (1, 6), 0)])
def test_cosine_similarity_matches_torch_with_broadcasting_and_gradients(case):
    torch = _torch()
    s1, s2, dim = case
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(s1), rng.standard_normal(s2)
    fa, fb = flow.tensor(a, requires_grad=True), flow.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    fy = F.cosine_similarity(fa, fb, dim=dim)
    ty = torch.nn.functional.cosine_similarity(ta, tb, dim=dim)
    np.testing.assert_allclose(fy.numpy(), ty.detach().numpy(), rtol=1e-12)
    w = rng.standard_normal(tuple(ty.shape))
    (fy * flow.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(fa.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fb.grad.numpy(), tb.grad.numpy(), rtol=1e-10, atol=1e-12)
    m = nn.CosineSimilarity(dim=dim, eps=1e-6)
    np.testing.assert_allclose(m(fa, fb).numpy(), ty.detach().numpy(), rtol=1e-12)
    # eps bounds the denominator: sqrt(max(|a|² |b|², eps²)), OneFlow's CosineSimilarityFunctor
    z = F.cosine_similarity(flow.zeros(1, 3, dtype=flow.float64), flow.tensor([[1e-5, 0.0, 0.0]]), eps=1e-3)
    np.testing.assert_allclose(z.numpy(), [0.0])
    tiny = F.cosine_similarity(flow.tensor([[1e-3, 0.0]]), flow.tensor([[2e-3, 0.0]]), eps=1e-2)
    np.testing.assert_allclose(tiny.numpy(), [2e-6 / 1e-2], rtol=1e-5)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance_matches_torch(p, keepdim):
    torch = _torch()
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    fa, ta = flow.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    fy = nn.PairwiseDistance(p=p, keepdim=keepdim)(fa, flow.tensor(b))
    ty = torch.nn.functional.pairwise_distance(ta, torch.tensor(b), p=p, keepdim=keepdim)
    np.testing.assert_allclose(fy.numpy(), ty.detach().numpy(), rtol=1e-12)
    fy.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(fa.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_distance_docstring_examples_and_functional_bindings():
    x1 = flow.arange(12).reshape(3, 4)
    out = F.pairwise_distance(x1, x1, p=2)
    assert out.dtype == flow.float32 and tuple(out.shape) == (3,)
    np.testing.assert_allclose(out.numpy(), [2e-6] * 3, rtol=1e-5)  # ‖0 + eps‖ over 4 entries: 2·1e-6
    assert tuple(nn.CosineSimilarity(dim=1, eps=1e-6)(flow.randn(100, 128), flow.randn(100, 128)).shape) == (100,)
    assert flow._C.cosine_similarity is F.cosine_similarity and flow._C.pairwise_distance is F.pairwise_distance


def test_distances_on_global_tensors():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((6, 4)).astype(np.float32)
    ga = flow.tensor(a).to_global(placement=P0, sbp=flow.sbp.split(0))
    gb = flow.tensor(b).to_global(placement=P0, sbp=flow.sbp.split(0))
    cos = F.cosine_similarity(ga, gb)
    dist = F.pairwise_distance(ga, gb)
    assert cos.is_global and dist.is_global
    np.testing.assert_allclose(cos.numpy(), F.cosine_similarity(flow.tensor(a), flow.tensor(b)).numpy(), rtol=1e-6)
    np.testing.assert_allclose(dist.numpy(), np.sqrt(((a - b + 1e-6) ** 2).sum(1)), rtol=1e-5)


def test_distance_errors():
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(3\) must match the size of tensor b \(4\) at "
                                           r"non-singleton dimension 1$"):
        F.cosine_similarity(flow.ones(2, 3), flow.ones(2, 4))
    with pytest.raises(RuntimeError, match="^expected common dtype to be floating point, yet common dtype is "
                                           "oneflow.int64$"):
        F.cosine_similarity(flow.arange(4).reshape(2, 2), flow.arange(4).reshape(2, 2))


# --- gumbel softmax -----------------------------------------------------------------------------------------------
def test_gumbel_softmax_soft_is_softmax_of_gumbel_perturbed_logits_seeded():
    x = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float64))
    gen = flow.Generator()
    gen.manual_seed(7)
    y = F.gumbel_softmax(flow.tensor(x), tau=0.5, generator=gen).numpy()
    np.testing.assert_allclose(y.sum(1), [1.0, 1.0], rtol=1e-12)
    assert (y > 0).all()
    gen.manual_seed(7)
    again = F.gumbel_softmax(flow.tensor(x), tau=0.5, generator=gen).numpy()
    np.testing.assert_array_equal(again, y)  # seeded: the same noise
    # the sample is softmax((x + g) / tau): recover g up to a per-row constant and check it is the same for tau=1
    gen.manual_seed(7)
    y1 = F.gumbel_softmax(flow.tensor(x), tau=1.0, generator=gen).numpy()
    g05 = np.log(y) * 0.5 - x
    g1 = np.log(y1) - x
    np.testing.assert_allclose(g05 - g05.mean(1, keepdims=True), g1 - g1.mean(1, keepdims=True), atol=1e-9)


def test_gumbel_softmax_hard_samples_follow_the_softmax_and_gradient_is_straight_through():
    flow.manual_seed(3)
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    logits = flow.tensor(np.tile(np.log(probs), (20000, 1)), requires_grad=True)
    y = F.gumbel_softmax(logits, tau=1.0, hard=True)
    v = y.numpy()
    assert set(np.unique(v)) == {0.0, 1.0} and (v.sum(1) == 1).all()
    freq = v.mean(0)
    np.testing.assert_allclose(freq, probs, atol=0.015)  # Gumbel-max: argmax(x + g) ~ Categorical(softmax x)
    # straight through: the gradient is the soft sample's, d/dx of Σ w·softmax((x + g)/tau)
    w = np.arange(4.0)
    flow.manual_seed(5)
    x = flow.tensor(np.log(probs)[None], requires_grad=True)
    hard = F.gumbel_softmax(x, tau=0.7, hard=True)
    (hard * flow.tensor(w)).sum().backward()
    flow.manual_seed(5)
    x2 = flow.tensor(np.log(probs)[None], requires_grad=True)
    soft = F.gumbel_softmax(x2, tau=0.7)
    (soft * flow.tensor(w)).sum().backward()
    s = soft.numpy()[0]
    np.testing.assert_array_equal(hard.numpy()[0], (np.arange(4) == s.argmax()).astype(float))
    expected = s * (w - (s * w).sum()) / 0.7  # the softmax Jacobian times w, over tau
    np.testing.assert_allclose(x.grad.numpy()[0], expected, rtol=1e-9)
    np.testing.assert_allclose(x2.grad.numpy()[0], expected, rtol=1e-9)
    assert flow._C.gumbel_softmax is F.gumbel_softmax


def test_gumbel_softmax_global_and_dims():
    x = np.zeros((4, 3, 5), np.float32)
    g = F.gumbel_softmax(flow.tensor(x).to_global(placement=P0, sbp=flow.sbp.split(0)), hard=True)
    assert g.is_global
    np.testing.assert_array_equal(g.numpy().sum(0), np.ones((3, 5)))  # 3-D: OneFlow's default axis is 0
    loc = F.gumbel_softmax(flow.tensor(x), dim=-1).numpy()
    np.testing.assert_allclose(loc.sum(-1), 1.0, rtol=1e-6)


# --- sparse softmax cross entropy ---------------------------------------------------------------------------------
def test_sparse_softmax_cross_entropy_docstring_example_gradient_and_global():
    np_logits = np.array([[2.0, -5.0, 0.5, -0.1], [0.0, 0.0, 1.9, 1.4], [-100.0, 100.0, -100.0, -100.0]])
    logits = flow.tensor(np_logits, dtype=flow.float32)
    labels = flow.tensor(np.array([0, 3, 1]), dtype=flow.int32)
    out = F.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    np.testing.assert_allclose(out.numpy(), [2.9751e-01, 1.1448e+00, 0.0], atol=1e-4)  # (printed to 5 digits)
    rng = np.random.default_rng(4)
    lg = rng.standard_normal((2, 3, 5))
    lb = rng.integers(0, 5, (2, 3))
    x = flow.tensor(lg, requires_grad=True)
    loss = F.sparse_softmax_cross_entropy(flow.tensor(lb), x)
    p = np.exp(lg - lg.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(loss.numpy(), -np.log(np.take_along_axis(p, lb[..., None], -1))[..., 0], rtol=1e-12)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), p - np.eye(5)[lb], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(flow._C.sparse_softmax_cross_entropy(x, flow.tensor(lb)).numpy(), loss.numpy())
    g = F.sparse_softmax_cross_entropy(flow.tensor(lb).to_global(placement=P0, sbp=flow.sbp.split(0)),
                                       x.detach().to_global(placement=P0, sbp=flow.sbp.split(0)))
    assert g.is_global
    np.testing.assert_allclose(g.numpy(), loss.numpy(), rtol=1e-12)
    # OneFlow 0.9's words (user/ops/sparse_softmax_cross_entropy_op.cpp)
    with pytest.raises(RuntimeError, match=r"^The dimension of label is expected to be less than that of prediction "
                                           r"by 1, but found 1 and 2$"):
        F.sparse_softmax_cross_entropy(flow.tensor([0, 1, 2]), x)


# --- upsample -----------------------------------------------------------------------------------------------------
def test_upsample_is_oneflows_module_binding_and_interpolates_a_tensor():
    x = flow.tensor(np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2))
    m = F.upsample(scale_factor=2.0, mode="nearest")  # OneFlow 0.9: nn.functional.upsample is nn.Upsample
    assert isinstance(m, nn.Upsample) and repr(m) == "Upsample(scale_factor=2.0, mode=nearest)"
    np.testing.assert_array_equal(m(x).numpy(), F.interpolate(x, scale_factor=2.0).numpy())
    y = F.upsample(x, size=(3, 5), mode="bilinear", align_corners=True)
    np.testing.assert_array_equal(y.numpy(), F.interpolate(x, size=(3, 5), mode="bilinear",
                                                           align_corners=True).numpy())
    g = F.upsample(x.to_global(placement=P0, sbp=flow.sbp.split(1)), scale_factor=2)
    assert g.is_global and tuple(g.shape) == (1, 2, 4, 4)


# --- deform_conv2d ------------------------------------------------------------------------------------------------
def _bilinear(img, y, x):
    """torchvision's deform_conv2d bilinear_interpolate (CPU kernel) for one channel plane."""
    hgt, wid = img.shape
    if y <= -1 or hgt <= y or x <= -1 or wid <= x:
        return 0.0
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    y1, x1 = y0 + 1, x0 + 1
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    v1 = img[y0, x0] if y0 >= 0 and x0 >= 0 else 0.0
    v2 = img[y0, x1] if y0 >= 0 and x1 <= wid - 1 else 0.0
    v3 = img[y1, x0] if y1 <= hgt - 1 and x0 >= 0 else 0.0
    v4 = img[y1, x1] if y1 <= hgt - 1 and x1 <= wid - 1 else 0.0
    return hy * hx * v1 + hy * lx * v2 + ly * hx * v3 + ly * lx * v4


def _deform_ref(x, offset, weight, bias, stride, pad, dil, mask):
    n, c, h, w = x.shape
    o, cpg, kh, kw = weight.shape
    groups = c // cpg
    og = offset.shape[1] // (2 * kh * kw)
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    cols = np.zeros((n, c, kh, kw, oh, ow))
    for b in range(n):
        for ch in range(c):
            g = ch // (c // og)
            for i in range(kh):
                for j in range(kw):
                    k = i * kw + j
                    for yy in range(oh):
                        for xx in range(ow):
                            py = yy * stride[0] - pad[0] + i * dil[0] + offset[b, 2 * (g * kh * kw + k), yy, xx]
                            px = xx * stride[1] - pad[1] + j * dil[1] + offset[b, 2 * (g * kh * kw + k) + 1, yy, xx]
                            v = _bilinear(x[b, ch], py, px)
                            if mask is not None:
                                v *= mask[b, g * kh * kw + k, yy, xx]
                            cols[b, ch, i, j, yy, xx] = v
    out = np.zeros((n, o, oh, ow))
    opg = o // groups
    for gi in range(groups):
        cg = cols[:, gi * cpg:(gi + 1) * cpg].reshape(n, cpg * kh * kw, oh * ow)
        wg = weight[gi * opg:(gi + 1) * opg].reshape(opg, cpg * kh * kw)
        out[:, gi * opg:(gi + 1) * opg] = np.einsum("ok,nkl->nol", wg, cg).reshape(n, opg, oh, ow)
    return out + (0 if bias is None else bias[None, :, None, None])


DEFORM = [dict(n=2, c=2, h=5, w=6, o=3, k=3, stride=(1, 1), pad=(0, 0), dil=(1, 1), og=1, groups=1, mask=False),
          dict(n=1, c=4, h=6, w=5, o=4, k=2, stride=(2, 1), pad=(1, 1), dil=(1, 2), og=2, groups=2, mask=True),
          dict(n=1, c=2, h=4, w=4, o=2, k=3, stride=(1, 1), pad=(1, 1), dil=(1, 1), og=2, groups=1, mask=True)]


@pytest.mark.parametrize("k", range(len(DEFORM)))
def test_deform_conv2d_matches_torchvisions_formula_values_and_gradients(k):
    cfg = DEFORM[k]
    rng = np.random.default_rng(10 + k)
    n, c, h, w, o, ks = cfg["n"], cfg["c"], cfg["h"], cfg["w"], cfg["o"], cfg["k"]
    oh = (h + 2 * cfg["pad"][0] - cfg["dil"][0] * (ks - 1) - 1) // cfg["stride"][0] + 1
    ow = (w + 2 * cfg["pad"][1] - cfg["dil"][1] * (ks - 1) - 1) // cfg["stride"][1] + 1
    x = rng.standard_normal((n, c, h, w))
    offset = rng.uniform(-2.5, 2.5, (n, 2 * cfg["og"] * ks * ks, oh, ow))
    offset = np.where(np.abs(offset - np.round(offset)) < 0.02, offset + 0.1, offset)  # off the kinks
    weight = rng.standard_normal((o, c // cfg["groups"], ks, ks))
    bias = rng.standard_normal(o)
    mask = rng.uniform(0, 1, (n, cfg["og"] * ks * ks, oh, ow)) if cfg["mask"] else None
    args = (cfg["stride"], cfg["pad"], cfg["dil"])
    ref = _deform_ref(x, offset, weight, bias, *args, mask)
    tensors = [flow.tensor(a, requires_grad=True) for a in (x, offset, weight, bias)]
    fmask = flow.tensor(mask, requires_grad=True) if mask is not None else None
    out = F.deform_conv2d(tensors[0], tensors[1], tensors[2], tensors[3], stride=args[0], padding=args[1],
                          dilation=args[2], mask=fmask)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-12)
    wout = rng.standard_normal(ref.shape)
    (out * flow.tensor(wout)).sum().backward()

    def loss(xx, oo, ww, mm):
        return (_deform_ref(xx, oo, ww, bias, *args, mm) * wout).sum()

    arrays = [x, offset, weight] + ([mask] if mask is not None else [])
    grads = [tensors[0].grad, tensors[1].grad, tensors[2].grad] + ([fmask.grad] if mask is not None else [])
    check = np.random.default_rng(k)
    for which, (arr, grad) in enumerate(zip(arrays, grads)):
        for flat in check.choice(arr.size, size=min(6, arr.size), replace=False):  # central differences
            idx = np.unravel_index(flat, arr.shape)
            hi, lo = [a.copy() for a in arrays], [a.copy() for a in arrays]
            hi[which][idx] += 1e-6
            lo[which][idx] -= 1e-6
            pad4 = (lambda l: l + [None]) if mask is None else (lambda l: l)
            num = (loss(*pad4(hi)) - loss(*pad4(lo))) / 2e-6
            np.testing.assert_allclose(grad.numpy()[idx], num, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tensors[3].grad.numpy(), wout.sum((0, 2, 3)), rtol=1e-10)


def test_deform_conv2d_docstring_example_global_and_errors():
    inp = flow.rand(4, 3, 10, 10)
    weight = flow.rand(5, 3, 3, 3)
    offset = flow.rand(4, 18, 8, 8)
    mask = flow.rand(4, 9, 8, 8)
    out = F.deform_conv2d(inp, offset, weight, mask=mask)
    assert tuple(out.size()) == (4, 5, 8, 8)
    g = F.deform_conv2d(inp.to_global(placement=P0, sbp=flow.sbp.split(0)),
                        offset.to_global(placement=P0, sbp=flow.sbp.split(0)),
                        weight.to_global(placement=P0, sbp=flow.sbp.broadcast),
                        mask=mask.to_global(placement=P0, sbp=flow.sbp.split(0)))
    assert g.is_global
    np.testing.assert_allclose(g.numpy(), out.numpy(), rtol=1e-5, atol=1e-5)
    c_out = flow._C.deform_conv2d(inp, weight, offset, mask, None, 1, 1, 0, 0, 1, 1, 1, 1, True)
    np.testing.assert_allclose(c_out.numpy(), out.numpy(), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="^Rectangle convolution is not supported currently.$"):
        F.deform_conv2d(inp, offset, flow.rand(5, 3, 3, 2))
    with pytest.raises(RuntimeError, match=r"^The shape of the offset tensor at dimension 1 is not valid. It should "
                                           r"be a multiple of 2 \* weight.size\[2\] \* weight.size\[3\].\nGot "
                                           r"offset.shape\[1\]=4, while 2 \* weight.size\[2\] \* weight.size\[3\]=18$"):
        F.deform_conv2d(inp, flow.rand(4, 4, 8, 8), weight)


def test_gumbel_softmax_module_paths():
    # (gumbel_softmax inside nn.Graph runs now: tests/test_limits_gumbel_graph.py)
    from oneflow_compat.nn.modules import distance

    assert distance.CosineSimilarity is nn.CosineSimilarity and distance.PairwiseDistance is nn.PairwiseDistance
