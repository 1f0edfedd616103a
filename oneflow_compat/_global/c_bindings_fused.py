"""`oneflow._C`'s fused functionals (OneFlow v0.9.0 functional_api.yaml), composed from registered ops so autograd,
SBP and nn.Graph come with them. The formulas are OneFlow's kernels' (v0.9.0 `oneflow/user/kernels/`):

* YOLOv5's CIoU pieces: fused_get_bounding_boxes_coord_kernel.cu, fused_get_intersection_area_kernel.cu,
  fused_get_iou_kernel.cu, fused_center_kernel.cu, fused_get_convex_diagonal_squared_kernel.cu,
  fused_get_ciou_diagonal_angle_kernel.cu, fused_get_ciou_result_kernel.cu. Where OneFlow's backward kernel
  gives no gradient to an input (fused_get_iou: w2 / h2; fused_get_ciou_result: through alpha) the composition
  detaches it, so the gradients are OneFlow's.
* attention: fused_self_attention_query_mul_key_and_value_kernel.cu (hidden (seq, batch, heads * 3 * head_size)),
  fused_multi_head_attention_inference_kernel.cu, fused_bias_add_scale_mask_softmax_dropout.cu.
* recommendation: fused_dot_feature_interaction_op.cpp / _kernel.cu (DLRM's pairwise dots, FM's sum pooling),
  fused_cross_feature_interaction.cu (DCN's cross layer, "vector" and "matrix").
* grouped_matmul_bias.cu: one x @ w^T (+ b) per group.
"""
import math

from oneflow_compat._global import functional as _F
from oneflow_compat._global import fused_functionals as _fused
from oneflow_compat._global import tensor_functions as _T
from oneflow_compat._global.tensor import BOOL as _BOOL, Tensor
from oneflow_compat.ir import dtypes as _dtypes


def _tensors(fn, **named):
    for name, t in named.items():
        if not isinstance(t, Tensor):
            raise TypeError("%s(): argument '%s' must be Tensor, not %s" % (fn, name, type(t).__name__))


# --- YOLOv5 CIoU ----------------------------------------------------------------------------------------------------
def fused_get_boundding_boxes_coord(x1, y1, w1, h1, x2, y2, w2, h2):
    """(b1_x1, b1_x2, b1_y1, b1_y2, b2_x1, b2_x2, b2_y1, b2_y2): the corners of two (center, size) boxes."""
    _tensors("fused_get_boundding_boxes_coord", x1=x1, y1=y1, w1=w1, h1=h1, x2=x2, y2=y2, w2=w2, h2=h2)
    hw1, hh1, hw2, hh2 = (_F.div(v, 2.0) for v in (w1, h1, w2, h2))
    return (_F.sub(x1, hw1), _F.add(x1, hw1), _F.sub(y1, hh1), _F.add(y1, hh1),
            _F.sub(x2, hw2), _F.add(x2, hw2), _F.sub(y2, hh2), _F.add(y2, hh2))


def fused_get_intersection_area(b1_x1, b1_x2, b2_x1, b2_x2, b1_y1, b1_y2, b2_y1, b2_y2):
    """(min(x2) - max(x1)) * (min(y2) - max(y1)) where both are positive, else 0."""
    _tensors("fused_get_intersection_area", b1_x1=b1_x1, b1_x2=b1_x2, b2_x1=b2_x1, b2_x2=b2_x2)
    dx = _F.sub(_F.minimum(b1_x2, b2_x2), _F.maximum(b1_x1, b2_x1))
    dy = _F.sub(_F.minimum(b1_y2, b2_y2), _F.maximum(b1_y1, b2_y1))
    return _F.mul(_F.clamp(dx, min=0.0), _F.clamp(dy, min=0.0))


def fused_get_iou(w1, h1, w2, h2, inter, eps):
    """inter / (w1 h1 + w2 h2 - inter + eps); no gradient to w2, h2 (OneFlow's backward gives none)."""
    _tensors("fused_get_iou", w1=w1, h1=h1, w2=w2, h2=h2, inter=inter)
    union = _F.add(_F.sub(_F.add(_F.mul(w1, h1), _F.mul(w2.detach(), h2.detach())), inter), float(eps))
    return _F.div(inter, union)


def fused_get_center_dist(b1_x1, b1_x2, b2_x1, b2_x2, b1_y1, b1_y2, b2_y1, b2_y2):
    """rho2: ((b2_x1 + b2_x2 - b1_x1 - b1_x2)^2 + (the same in y)^2) / 4."""
    _tensors("fused_get_center_dist", b1_x1=b1_x1, b1_x2=b1_x2, b2_x1=b2_x1, b2_x2=b2_x2)
    dx = _F.sub(_F.add(b2_x1, b2_x2), _F.add(b1_x1, b1_x2))
    dy = _F.sub(_F.add(b2_y1, b2_y2), _F.add(b1_y1, b1_y2))
    return _F.div(_F.add(_F.square(dx), _F.square(dy)), 4.0)


def fused_get_convex_diagonal_squared(b1_x1, b1_x2, b2_x1, b2_x2, b1_y1, b1_y2, b2_y1, b2_y2, eps):
    """c2: the squared diagonal of the smallest box holding both, plus eps."""
    _tensors("fused_get_convex_diagonal_squared", b1_x1=b1_x1, b1_x2=b1_x2, b2_x1=b2_x1, b2_x2=b2_x2)
    cw = _F.sub(_F.maximum(b1_x2, b2_x2), _F.minimum(b1_x1, b2_x1))
    ch = _F.sub(_F.maximum(b1_y2, b2_y2), _F.minimum(b1_y1, b2_y1))
    return _F.add(_F.add(_F.square(cw), _F.square(ch)), float(eps))


def fused_get_ciou_diagonal_angle(w1, h1, w2, h2, eps):
    """v: 4 / pi^2 * (atan(w2 / (h2 + eps)) - atan(w1 / (h1 + eps)))^2."""
    _tensors("fused_get_ciou_diagonal_angle", w1=w1, h1=h1, w2=w2, h2=h2)
    d = _F.sub(_T.atan(_F.div(w2, _F.add(h2, float(eps)))), _T.atan(_F.div(w1, _F.add(h1, float(eps)))))
    return _F.mul(_F.square(d), 4.0 / (math.pi * math.pi))


def fused_get_ciou_result(v, iou, rho2, c2, eps):
    """(y, alpha): alpha = v / (v - iou + 1 + eps), y = iou - (rho2 / c2 + v * alpha); alpha is a constant to the
    gradient, as in OneFlow's backward kernel."""
    _tensors("fused_get_ciou_result", v=v, iou=iou, rho2=rho2, c2=c2)
    alpha = _F.div(v, _F.add(_F.sub(v, iou), 1.0 + float(eps))).detach()
    y = _F.sub(iou, _F.add(_F.div(rho2, c2), _F.mul(v, alpha)))
    return y, alpha


# --- attention ------------------------------------------------------------------------------------------------------
def fused_self_attention(hidden_states, head_size=8, alpha=1.0):
    """(query_mul_key, value): hidden_states (seq, batch, heads * 3 * head_size) read as (seq, batch, heads, 3,
    head_size); query_mul_key = alpha * q k^T (batch, heads, seq, seq), value (batch, heads, seq, head_size)."""
    _tensors("fused_self_attention", hidden_states=hidden_states)
    if hidden_states.ndim != 3 or hidden_states.shape[2] % (3 * int(head_size)):
        raise RuntimeError("fused_self_attention: hidden_states must be (seq_len, batch, num_heads * 3 * head_size)"
                           " with head_size %d, got shape %s" % (head_size, tuple(hidden_states.shape)))
    s, b, hidden = hidden_states.shape
    heads = hidden // (3 * int(head_size))
    x = _F.permute(_F.reshape(hidden_states, (s, b, heads, 3, int(head_size))), 3, 1, 2, 0, 4)  # (3, b, h, s, d)
    q, k, v = (_F.reshape(_T.narrow(x, 0, i, 1), (b, heads, s, int(head_size))) for i in range(3))
    return _F.matmul(q, k, transpose_b=True, alpha=float(alpha)), v


def fused_bias_add_scale_mask_softmax_dropout(x, bias, mask, *, fill_value=0.0, scale=1.0, p=0.5, training=True,
                                              generator=None):
    """(dropout(softmax_y), softmax_y) with softmax_y = softmax of (x + bias) * scale where mask, fill_value
    elsewhere."""
    _tensors("fused_bias_add_scale_mask_softmax_dropout", x=x, bias=bias, mask=mask)
    return _fused.fused_scale_mask_softmax_dropout(_F.add(x, bias), mask, fill_value=fill_value, scale=scale, p=p,
                                                   training=training, generator=generator)


def _hidden_slice(t, start, end):
    end = t.shape[-1] if end == -1 else int(end)
    return _T.narrow(t, t.ndim - 1, int(start), end - int(start))


def fused_multi_head_attention_inference(query, key, value, num_heads, causal=False, query_hidden_slice_start=0,
                                         query_hidden_slice_end=-1, key_hidden_slice_start=0,
                                         key_hidden_slice_end=-1, value_hidden_slice_start=0,
                                         value_hidden_slice_end=-1):
    """softmax(q k^T / sqrt(head_size)) v per head, over (batch, seq, hidden) inputs whose hidden slices
    [start, end) hold the heads; causal: query i sees keys j <= i. Out: (batch, seq_q, value hidden)."""
    _tensors("fused_multi_head_attention_inference", query=query, key=key, value=value)
    q = _hidden_slice(query, query_hidden_slice_start, query_hidden_slice_end)
    k = _hidden_slice(key, key_hidden_slice_start, key_hidden_slice_end)
    v = _hidden_slice(value, value_hidden_slice_start, value_hidden_slice_end)
    n = int(num_heads)
    if q.shape[-1] % n or k.shape[-1] != q.shape[-1] or v.shape[-1] % n:
        raise RuntimeError("fused_multi_head_attention_inference: the query / key hidden sizes (%d, %d) must be "
                           "equal and divisible by num_heads %d, and the value's (%d) too"
                           % (q.shape[-1], k.shape[-1], n, v.shape[-1]))
    b, sq, sk = q.shape[0], q.shape[1], k.shape[1]

    def heads(t):
        return _F.permute(_F.reshape(t, (t.shape[0], t.shape[1], n, t.shape[2] // n)), 0, 2, 1, 3)
    d = q.shape[-1] // n
    scores = _F.matmul(heads(q), heads(k), transpose_b=True, alpha=1.0 / math.sqrt(d))
    if causal:
        import numpy as np

        from oneflow_compat._global import creation

        keep = creation.new_tensor_like(np.tril(np.ones((sq, sk), dtype=bool)), scores, dtype=_BOOL)
        scores = _F.masked_fill(scores, _F.logical_not(keep), float("-inf"))
    out = _F.matmul(_F.softmax(scores, dim=-1), heads(v))  # (b, n, sq, dv)
    return _F.reshape(_F.permute(out, 0, 2, 1, 3), (b, sq, v.shape[-1]))


# --- recommendation -------------------------------------------------------------------------------------------------
def fused_dot_feature_interaction(features, output_concat=None, self_interaction=False, output_padding=0,
                                  pooling="none"):
    """DLRM's interaction: the features (each (batch, n_i, d)) concatenated to (batch, N, d), the dots of every
    pair i > j (i >= j with self_interaction) in row order, after output_concat and before output_padding zeros;
    pooling "sum": FM's bi-interaction 0.5 * ((sum of the features)^2 - sum of their squares) summed over d,
    (batch, 1) (OneFlow's functor reduces the op's (batch, d) over axis 1, keepdim)."""
    features = list(features)
    for i, f in enumerate(features):
        if not isinstance(f, Tensor) or f.ndim != 3:
            raise RuntimeError("fused_dot_feature_interaction: features[%d] must be a 3-D (batch, n, d) tensor" % i)
    if pooling not in ("none", "sum"):
        raise RuntimeError("pooling should be sum or none, but get %s" % (pooling,))
    t = _F.cat(features, dim=1) if len(features) > 1 else features[0]
    if pooling == "sum":
        if output_padding != 0:
            raise RuntimeError("output_padding should be equal to 0. ")
        if output_concat is not None:
            raise RuntimeError("output_concat should not exist")
        # the op's (batch, d) output in the features' dtype (half accumulated in float), then ReduceSum over d
        half = t.dtype == _dtypes.float16
        tf = _F.cast(t, _dtypes.float32) if half else t
        s = _F.sum(tf, 1)
        bi = _F.mul(_F.sub(_F.square(s), _F.sum(_F.square(tf), 1)), 0.5)
        return _F.sum(_F.cast(bi, t.dtype) if half else bi, 1, True)
    n = t.shape[1]
    off = 1 if self_interaction else 0
    rows = [i for i in range(n) for _ in range(i + off)]
    cols = [j for i in range(n) for j in range(i + off)]
    z = _F.matmul(t, t, transpose_b=True)  # (batch, N, N)
    import numpy as np

    from oneflow_compat._global import creation

    flat = creation.new_tensor_like(np.array([r * n + c for r, c in zip(rows, cols)], dtype=np.int64), z,
                                   dtype=_dtypes.int64)
    parts = [_T.index_select(_F.reshape(z, (z.shape[0], n * n)), 1, flat)]
    if output_concat is not None:
        parts.insert(0, output_concat)
    if output_padding:
        parts.append(creation.new_tensor_like(np.zeros((t.shape[0], int(output_padding)), np.float32), t,
                                              dtype=t.dtype))
    return _F.cat(parts, dim=1) if len(parts) > 1 else parts[0]


def fused_cross_feature_interaction(x, weight, x_0, bias, interaction_mode):
    """DCN's cross layer: "vector": x_0 * (x @ weight^T) + bias + x (weight (1, d)); "matrix": x_0 * (x @
    weight^T + bias) + x (weight (d, d))."""
    _tensors("fused_cross_feature_interaction", x=x, weight=weight, x_0=x_0, bias=bias)
    xw = _F.matmul(x, weight, transpose_b=True)
    if interaction_mode == "vector":
        return _F.add(_F.add(_F.mul(x_0, xw), bias), x)
    if interaction_mode == "matrix":
        return _F.add(_F.mul(_F.add(xw, bias), x_0), x)
    raise ValueError("fused_cross_feature_interaction: interaction_mode must be 'vector' or 'matrix', got %r"
                     % (interaction_mode,))


# --- grouped matmuls ------------------------------------------------------------------------------------------------
def grouped_matmul_bias(xs, weights, biases):
    """One x @ w^T + b per group (tuples of equal length)."""
    xs, weights, biases = list(xs), list(weights), list(biases)
    if not len(xs) == len(weights) == len(biases):
        raise RuntimeError("grouped_matmul_bias: xs, weights and biases must be as many, got %d, %d and %d"
                           % (len(xs), len(weights), len(biases)))
    return tuple(_F.add(_F.matmul(x, w, transpose_b=True), b) for x, w, b in zip(xs, weights, biases))


def grouped_matmul(xs, weights):
    xs, weights = list(xs), list(weights)
    if len(xs) != len(weights):
        raise RuntimeError("grouped_matmul: xs and weights must be as many, got %d and %d" % (len(xs), len(weights)))
    return tuple(_F.matmul(x, w, transpose_b=True) for x, w in zip(xs, weights))
