"""oneflow._C's fused functionals (functional_api.yaml v0.9.0) with the yaml's keyword names, against the
formulas of OneFlow's kernels written in numpy here (YOLOv5 CIoU pieces, attention, feature interactions, grouped
matmuls); OneFlow's backward kernels' gradients; two simulated ranks; bad input."""
import math

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import _C
from simulated_ranks import on_ranks

RNG = np.random.RandomState(9)


def _boxes(n=5):
    return [RNG.rand(n).astype(np.float32) + (0.5 if i % 4 >= 2 else 0.0) for i in range(8)]


def test_ciou_pieces_match_the_kernels_formulas():
    x1, y1, w1, h1, x2, y2, w2, h2 = _boxes()
    coords = _C.fused_get_boundding_boxes_coord(*(flow.tensor(v) for v in (x1, y1, w1, h1, x2, y2, w2, h2)))
    want = [x1 - w1 / 2, x1 + w1 / 2, y1 - h1 / 2, y1 + h1 / 2, x2 - w2 / 2, x2 + w2 / 2, y2 - h2 / 2, y2 + h2 / 2]
    for g, w in zip(coords, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-6)
    b1x1, b1x2, b1y1, b1y2, b2x1, b2x2, b2y1, b2y2 = want
    kw = dict(b1_x1=coords[0], b1_x2=coords[1], b2_x1=coords[4], b2_x2=coords[5], b1_y1=coords[2],
              b1_y2=coords[3], b2_y1=coords[6], b2_y2=coords[7])
    inter = _C.fused_get_intersection_area(**kw)
    dx = np.minimum(b1x2, b2x2) - np.maximum(b1x1, b2x1)
    dy = np.minimum(b1y2, b2y2) - np.maximum(b1y1, b2y1)
    want_inter = np.where((dx > 0) & (dy > 0), dx * dy, 0)
    np.testing.assert_allclose(inter.numpy(), want_inter, rtol=1e-5, atol=1e-7)
    eps = 1e-7
    iou = _C.fused_get_iou(w1=flow.tensor(w1), h1=flow.tensor(h1), w2=flow.tensor(w2), h2=flow.tensor(h2),
                           inter=inter, eps=eps)
    want_iou = want_inter / (w1 * h1 + w2 * h2 - want_inter + eps)
    np.testing.assert_allclose(iou.numpy(), want_iou, rtol=1e-5)
    rho2 = _C.fused_get_center_dist(**kw)
    want_rho2 = ((b2x1 + b2x2 - b1x1 - b1x2) ** 2 + (b2y1 + b2y2 - b1y1 - b1y2) ** 2) / 4
    np.testing.assert_allclose(rho2.numpy(), want_rho2, rtol=1e-5)
    c2 = _C.fused_get_convex_diagonal_squared(eps=eps, **kw)
    want_c2 = ((np.maximum(b1x2, b2x2) - np.minimum(b1x1, b2x1)) ** 2
               + (np.maximum(b1y2, b2y2) - np.minimum(b1y1, b2y1)) ** 2 + eps)
    np.testing.assert_allclose(c2.numpy(), want_c2, rtol=1e-5)
    v = _C.fused_get_ciou_diagonal_angle(w1=flow.tensor(w1), h1=flow.tensor(h1), w2=flow.tensor(w2),
                                         h2=flow.tensor(h2), eps=eps)
    want_v = 4 / math.pi ** 2 * (np.arctan(w2 / (h2 + eps)) - np.arctan(w1 / (h1 + eps))) ** 2
    np.testing.assert_allclose(v.numpy(), want_v, rtol=1e-4, atol=1e-7)
    y, alpha = _C.fused_get_ciou_result(v=v, iou=iou, rho2=rho2, c2=c2, eps=eps)
    want_alpha = want_v / (want_v - want_iou + 1 + eps)
    np.testing.assert_allclose(alpha.numpy(), want_alpha, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(y.numpy(), want_iou - (want_rho2 / want_c2 + want_v * want_alpha), rtol=1e-4,
                               atol=1e-6)


def test_ciou_gradients_are_the_backward_kernels():
    w1, h1, w2, h2, inter, v, rho2, c2 = (flow.tensor(a + 0.5, requires_grad=True) for a in _boxes())
    iou = _C.fused_get_iou(w1, h1, w2, h2, inter, 1e-7)
    y, alpha = _C.fused_get_ciou_result(v, iou, rho2, c2, 1e-7)
    y.sum().backward()
    assert w2.grad is None and h2.grad is None  # the iou kernel's backward gives them none
    np.testing.assert_allclose(v.grad.numpy(), -alpha.numpy(), rtol=1e-6)  # dv = -alpha * dy
    np.testing.assert_allclose(rho2.grad.numpy(), -1 / c2.numpy(), rtol=1e-6)
    np.testing.assert_allclose(c2.grad.numpy(), rho2.numpy() / c2.numpy() ** 2, rtol=1e-5)
    u = w1.numpy() * h1.numpy() + w2.numpy() * h2.numpy() - inter.numpy() + 1e-7
    np.testing.assert_allclose(w1.grad.numpy(), -inter.numpy() * h1.numpy() / u ** 2, rtol=1e-4)


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_attention_forms():
    s, b, heads, d = 4, 2, 3, 2
    hidden = RNG.randn(s, b, heads * 3 * d).astype(np.float32)
    qmk, value = _C.fused_self_attention(hidden_states=flow.tensor(hidden), head_size=d, alpha=0.5)
    r = hidden.reshape(s, b, heads, 3, d).transpose(3, 1, 2, 0, 4)  # (3, b, h, s, d)
    np.testing.assert_allclose(qmk.numpy(), 0.5 * r[0] @ r[1].transpose(0, 1, 3, 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(value.numpy(), r[2])

    q = RNG.randn(2, 3, 8).astype(np.float32)
    k = RNG.randn(2, 4, 8).astype(np.float32)
    vv = RNG.randn(2, 4, 6).astype(np.float32)
    got = _C.fused_multi_head_attention_inference(query=flow.tensor(q), key=flow.tensor(k), value=flow.tensor(vv),
                                                  num_heads=2, causal=True, query_hidden_slice_start=0,
                                                  query_hidden_slice_end=-1)
    qh = q.reshape(2, 3, 2, 4).transpose(0, 2, 1, 3)
    kh = k.reshape(2, 4, 2, 4).transpose(0, 2, 1, 3)
    vh = vv.reshape(2, 4, 2, 3).transpose(0, 2, 1, 3)
    sc = qh @ kh.transpose(0, 1, 3, 2) / 2.0
    sc = np.where(np.tril(np.ones((3, 4), bool)), sc, -np.inf)
    want = (_softmax(sc) @ vh).transpose(0, 2, 1, 3).reshape(2, 3, 6)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    qkv = np.concatenate([q, q, q[:, :, :6]], -1)  # one packed tensor, sliced
    got = _C.fused_multi_head_attention_inference(flow.tensor(qkv), flow.tensor(qkv), flow.tensor(qkv), 2,
                                                  False, 0, 8, 8, 16, 16, 22)
    qh = q.reshape(2, 3, 2, 4).transpose(0, 2, 1, 3)
    vh = q[:, :, :6].reshape(2, 3, 2, 3).transpose(0, 2, 1, 3)
    want = (_softmax(qh @ qh.transpose(0, 1, 3, 2) / 2.0) @ vh).transpose(0, 2, 1, 3).reshape(2, 3, 6)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)

    x = RNG.randn(2, 3, 4).astype(np.float32)
    bias = RNG.randn(4).astype(np.float32)
    mask = RNG.rand(2, 3, 4) > 0.3
    y, sm = _C.fused_bias_add_scale_mask_softmax_dropout(flow.tensor(x), flow.tensor(bias), flow.tensor(mask),
                                                         fill_value=-1e4, scale=0.5, p=0.0, training=True)
    want = _softmax(np.where(mask, (x + bias) * 0.5, -1e4))
    np.testing.assert_allclose(sm.numpy(), want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-7)


def test_feature_interactions():
    f0 = RNG.randn(3, 1, 4).astype(np.float32)
    f1 = RNG.randn(3, 2, 4).astype(np.float32)
    dense = RNG.randn(3, 5).astype(np.float32)
    t = np.concatenate([f0, f1], 1)
    z = t @ t.transpose(0, 2, 1)
    pairs = [(i, j) for i in range(3) for j in range(i)]
    flat = np.stack([z[:, i, j] for i, j in pairs], 1)
    got = _C.fused_dot_feature_interaction(features=[flow.tensor(f0), flow.tensor(f1)],
                                           output_concat=flow.tensor(dense), self_interaction=False,
                                           output_padding=2, pooling="none")
    np.testing.assert_allclose(got.numpy(), np.concatenate([dense, flat, np.zeros((3, 2))], 1), rtol=1e-5,
                               atol=1e-6)
    got = _C.fused_dot_feature_interaction([flow.tensor(f0), flow.tensor(f1)], self_interaction=True)
    pairs = [(i, j) for i in range(3) for j in range(i + 1)]
    np.testing.assert_allclose(got.numpy(), np.stack([z[:, i, j] for i, j in pairs], 1), rtol=1e-5, atol=1e-6)
    got = _C.fused_dot_feature_interaction([flow.tensor(f0), flow.tensor(f1)], pooling="sum")
    want = (0.5 * (t.sum(1) ** 2 - (t ** 2).sum(1))).sum(1, keepdims=True)  # (batch, 1): summed over d too
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)

    x, x0 = RNG.randn(3, 4).astype(np.float32), RNG.randn(3, 4).astype(np.float32)
    wv, b = RNG.randn(1, 4).astype(np.float32), RNG.randn(4).astype(np.float32)
    got = _C.fused_cross_feature_interaction(x=flow.tensor(x), weight=flow.tensor(wv), x_0=flow.tensor(x0),
                                             bias=flow.tensor(b), interaction_mode="vector")
    np.testing.assert_allclose(got.numpy(), (x @ wv.T) * x0 + b + x, rtol=1e-5, atol=1e-6)
    wm = RNG.randn(4, 4).astype(np.float32)
    got = _C.fused_cross_feature_interaction(flow.tensor(x), flow.tensor(wm), flow.tensor(x0), flow.tensor(b),
                                             "matrix")
    np.testing.assert_allclose(got.numpy(), (x @ wm.T + b) * x0 + x, rtol=1e-5, atol=1e-6)


def test_grouped_matmuls_and_their_gradients():
    xs = [RNG.randn(2, 3).astype(np.float32), RNG.randn(4, 5).astype(np.float32)]
    ws = [RNG.randn(6, 3).astype(np.float32), RNG.randn(2, 5).astype(np.float32)]
    bs = [RNG.randn(6).astype(np.float32), RNG.randn(2).astype(np.float32)]
    fx = [flow.tensor(a, requires_grad=True) for a in xs]
    outs = _C.grouped_matmul_bias(xs=fx, weights=[flow.tensor(w) for w in ws], biases=[flow.tensor(b) for b in bs])
    for o, x, w, b in zip(outs, xs, ws, bs):
        np.testing.assert_allclose(o.numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
    (outs[0].sum() + outs[1].sum()).backward()
    np.testing.assert_allclose(fx[0].grad.numpy(), np.ones((2, 6)) @ ws[0], rtol=1e-5)
    outs = _C.grouped_matmul(xs=[flow.tensor(x) for x in xs], weights=[flow.tensor(w) for w in ws])
    np.testing.assert_allclose(outs[1].numpy(), xs[1] @ ws[1].T, rtol=1e-5, atol=1e-6)


def test_two_ranks_batch_split_gives_one_ranks_numbers():
    x, x0 = RNG.randn(4, 3).astype(np.float32), RNG.randn(4, 3).astype(np.float32)
    w, b = RNG.randn(1, 3).astype(np.float32), RNG.randn(3).astype(np.float32)

    def body():
        p = flow.placement("cpu", [0, 1])
        gx = flow.tensor(x, placement=p, sbp=flow.sbp.split(0))
        gx0 = flow.tensor(x0, placement=p, sbp=flow.sbp.split(0))
        gw = flow.tensor(w, placement=p, sbp=flow.sbp.broadcast, requires_grad=True)
        gb = flow.tensor(b, placement=p, sbp=flow.sbp.broadcast)
        out = _C.fused_cross_feature_interaction(gx, gw, gx0, gb, "vector")
        out.sum().backward()
        inter = _C.fused_get_intersection_area(gx[:, 0], gx[:, 1], gx0[:, 0], gx0[:, 1], gx[:, 2], gx0[:, 2],
                                               gx0[:, 1], gx[:, 0])
        return out.numpy(), gw.grad.numpy(), inter.numpy()

    want_w = (x0.sum(1, keepdims=True) * x).sum(0, keepdims=True)
    dx = np.minimum(x[:, 1], x0[:, 1]) - np.maximum(x[:, 0], x0[:, 0])
    dy = np.minimum(x0[:, 2], x[:, 0]) - np.maximum(x[:, 2], x0[:, 1])
    for got in on_ranks(2, body):
        np.testing.assert_allclose(got[0], (x @ w.T) * x0 + b + x, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1], want_w, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got[2], np.where((dx > 0) & (dy > 0), dx * dy, 0), rtol=1e-5, atol=1e-7)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"^fused_cross_feature_interaction: interaction_mode must be 'vector' or "
                                         r"'matrix', got 'cross'$"):
        _C.fused_cross_feature_interaction(flow.zeros(1, 2), flow.zeros(1, 2), flow.zeros(1, 2), flow.zeros(2),
                                           "cross")
    with pytest.raises(RuntimeError, match=r"^fused_self_attention: hidden_states must be \(seq_len, batch, "
                                           r"num_heads \* 3 \* head_size\) with head_size 8, got shape \(2, 1, 12\)$"):
        _C.fused_self_attention(flow.zeros(2, 1, 12))
    with pytest.raises(RuntimeError, match=r"^grouped_matmul: xs and weights must be as many, got 2 and 1$"):
        _C.grouped_matmul([flow.zeros(1, 1)] * 2, [flow.zeros(1, 1)])
    with pytest.raises(RuntimeError, match=r"^pooling should be sum or none, but get max$"):
        _C.fused_dot_feature_interaction([flow.zeros(1, 2, 2)], pooling="max")
    with pytest.raises(RuntimeError, match=r"^output_concat should not exist$"):
        _C.fused_dot_feature_interaction([flow.zeros(1, 2, 2)], output_concat=flow.zeros(1, 1), pooling="sum")
    with pytest.raises(TypeError, match=r"^fused_get_iou\(\): argument 'inter' must be Tensor, not float$"):
        _C.fused_get_iou(flow.zeros(1), flow.zeros(1), flow.zeros(1), flow.zeros(1), 0.5, 1e-7)


def test_composed_bindings_run_inside_nn_graph():
    x = RNG.randn(2, 3, 6).astype(np.float32)
    v = RNG.randn(1, 6).astype(np.float32)

    def body(x, v):
        inter = _C.fused_get_intersection_area(x[:, 0, 0], x[:, 0, 1], x[:, 1, 0], x[:, 1, 1], x[:, 2, 0],
                                               x[:, 2, 1], x[:, 0, 2], x[:, 0, 3])
        return (_C.fused_cross_feature_interaction(x[:, 0], v, x[:, 1], v[0], "vector"), inter,
                _C.fused_dot_feature_interaction([x], self_interaction=True),
                _C.grouped_matmul([x[:, 0]], [v])[0], _C.fused_self_attention(x.permute(1, 0, 2), 2, 0.5)[0])

    class G(flow.nn.Graph):
        def build(self, x, v):
            return body(x, v)

    eager = body(flow.tensor(x), flow.tensor(v))
    for got, want in zip(G()(flow.tensor(x), flow.tensor(v)), eager):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
