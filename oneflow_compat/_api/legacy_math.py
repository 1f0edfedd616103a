"""The `flow.math` functions of OneFlow v0.3.4/v0.4.0 beyond the basic ones of `math.py`: inverse and hyperbolic
trigonometry, erf/erfc/lgamma/rint, the math binary elementwise ops, squared_difference, polyval,
reduce_logsumexp/reduce_std, tril/fused_scale_tril, in_top_k, the unsorted segment sums, two-stage reductions,
broadcast_to_compatible_with, reduced_shape_elem_cnt, and the exported gradient functions.

Signatures, defaults, op names and errors follow OneFlow's `oneflow/python/ops/math_unary_elementwise_ops.py`,
`math_binary_elementwise_ops.py`, `math_ops.py`, `reduce_ops.py` and `two_stage_reduce.py` at v0.3.4.
"""
import traceback

from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ir.graph import LazyBlob
from oneflow_compat.ops.registry import apply


def _blob(x, what):
    if not isinstance(x, LazyBlob):
        raise TypeError("%s expects a blob, got %s" % (what, type(x).__name__))
    return x


def _unary(op_type):
    def f(x, name=None):
        return apply(op_type, [_blob(x, "flow.math.%s" % op_type)], name=name)

    f.__name__ = f.__qualname__ = op_type
    f.__doc__ = "flow.math.%s(x, name=None): elementwise, floating blobs (OneFlow's `%s` op)." % (op_type, op_type)
    return f


acos = _unary("acos")
acosh = _unary("acosh")
asin = _unary("asin")
asinh = _unary("asinh")
atan = _unary("atan")
atanh = _unary("atanh")
cosh = _unary("cosh")
sinh = _unary("sinh")
tan = _unary("tan")
erf = _unary("erf")
erfc = _unary("erfc")
lgamma = _unary("lgamma")
rint = _unary("rint")
reciprocal_no_nan = _unary("reciprocal_no_nan")


def sigmoid_v2(x, name=None):
    """OneFlow's `sigmoid_v2` math op computes the sigmoid of the `sigmoid` op (1 / (1 + exp(-x)))."""
    return apply("sigmoid", [_blob(x, "flow.math.sigmoid_v2")], name=name)


def tanh_v2(x, name=None):
    """Deprecated in OneFlow: prints the warning and the caller's line, then returns flow.math.tanh(x)."""
    print("WARNING: flow.math.tanh_v2 has been deprecated. Please replace it by flow.math.tanh.\n        ")
    print(traceback.format_stack()[-2])
    return apply("tanh", [_blob(x, "flow.math.tanh_v2")], name=name)


def _binary(op_type):
    def f(x, y, name=None):
        what = "flow.math.%s" % op_type
        return apply(op_type, [_blob(x, what), _blob(y, what)], name=name)

    f.__name__ = f.__qualname__ = op_type
    f.__doc__ = ("flow.math.%s(x, y, name=None): elementwise over two floating blobs of one shape (OneFlow's "
                 "math binary elementwise ops do not broadcast)." % op_type)
    return f


atan2 = _binary("atan2")
floordiv = _binary("floordiv")
xdivy = _binary("xdivy")
xlogy = _binary("xlogy")


def _check_axis(axis, shape):
    """OneFlow's reduce_ops._check_axis: None -> every axis, an int -> [int]; each within the rank."""
    if axis is None:
        axis = list(range(len(shape)))
    if isinstance(axis, int):
        axis = [axis]
    assert isinstance(axis, (list, tuple)), "Invalid axis {}".format(axis)
    for a in axis:
        assert -len(shape) <= a < len(shape), "Invalid axis {}, len(shape): {}".format(axis, len(shape))
    return [a % len(shape) for a in axis]


def _unique(name, prefix):
    return name if name is not None else builder.current("flow.math").job.unique_name(prefix)


def _fill(value):
    return float(value) if isinstance(value, float) else int(value)


def tril(x, diagonal=0, fill_value=0, name=None):
    """x's entries on and below the `diagonal`-th diagonal of its last two axes; fill_value elsewhere."""
    return apply("tril", [_blob(x, "flow.math.tril")], {"diagonal": int(diagonal), "fill_value": _fill(fill_value)},
                 name=name)


def fused_scale_tril(x, diagonal=0, fill_value=0, scale=1, name=None):
    """tril(x · scale, diagonal, fill_value) in one op."""
    return apply("fused_scale_tril", [_blob(x, "flow.math.fused_scale_tril")],
                 {"diagonal": int(diagonal), "fill_value": _fill(fill_value), "scale": _fill(scale)}, name=name)


def in_top_k(targets, predictions, k, name=None):
    """int8 (n,): whether predictions[i, targets[i]] is among the k largest of row i (float32 predictions)."""
    return apply("in_top_k", [_blob(targets, "flow.math.in_top_k"), _blob(predictions, "flow.math.in_top_k")],
                 {"k": int(k)}, name=name)


def unsorted_segment_sum(data, segment_ids, num_segments, axis=0, name=None):
    """data's slices along `axis` summed by segment id: out has num_segments rows there."""
    return apply("unsorted_segment_sum", [data, segment_ids], {"axis": int(axis), "num_segments": int(num_segments)},
                 name=name)


def unsorted_segment_sum_like(data, segment_ids, like, axis=0, name=None):
    """unsorted_segment_sum with as many segments as `like` has along `axis` (out shaped like `like`)."""
    return apply("unsorted_segment_sum_like", [data, segment_ids, like], {"axis": int(axis)}, name=name)


def unsorted_batch_segment_sum(data, segment_ids, num_segments, name=None):
    """Per row of the leading axes of segment_ids: data (b..., k, r...) summed into (b..., num_segments, r...)."""
    return apply("unsorted_batch_segment_sum", [data, segment_ids], {"num_segments": int(num_segments)}, name=name)


def _two_stage(x, axis, keepdims, kind, name):
    from oneflow_compat import distribute as dist

    x = _blob(x, "flow.math.two_stage_reduce_%s" % kind)
    axis = _check_axis(axis, x.shape)
    split = dist.to_sbp(x.distribute)
    if split is None and x.hint is None and x.op.defn.role == "variable":
        split = x.op.attrs["spec"].sbp  # the variable's own distribute, on one device too
    # OneFlow asserts check_x_dictribute(x, axis): x must be split along one of the reduced axes
    assert split is not None and getattr(split, "axis", None) in axis, (
        "flow.math.two_stage_reduce_%s: the input must be split along one of the reduced axes %s (give it "
        "with_distribute(flow.distribute.split(axis))), its distribute is %r" % (kind, axis, x.distribute))
    name = _unique(name, "Reduce%s_" % kind.capitalize())
    out, _, count = apply("reduce_%s_device_stage" % kind, [x], {"axis": tuple(axis), "split_axis": split.axis},
                          name=name + "_device_stage")
    y, _ = apply("reduce_%s_global_stage" % kind, [out, count], {"axis": tuple(axis), "keepdims": bool(keepdims)},
                 name=name + "_global_stage")
    return y


def two_stage_reduce_max(x, axis=None, keepdims=False, name=None):
    """reduce_max of a blob split along a reduced axis: each device reduces its piece, then the per-device
    maxima are reduced (one value per device crosses devices); the gradient goes evenly to every maximum."""
    return _two_stage(x, axis, keepdims, "max", name)


def two_stage_reduce_min(x, axis=None, keepdims=False, name=None):
    """reduce_min counterpart of two_stage_reduce_max."""
    return _two_stage(x, axis, keepdims, "min", name)


def broadcast_to_compatible_with(x, compatible, name=None):
    """x broadcast (numpy rules) to the shape it has together with every blob of `compatible`."""
    import numpy as np

    assert isinstance(compatible, (list, tuple))
    x = _blob(x, "flow.math.broadcast_to_compatible_with")
    try:
        shape = np.broadcast_shapes(tuple(x.shape), *[tuple(c.shape) for c in compatible])
    except ValueError:
        raise ValueError("broadcast_to_compatible_with: shapes %s and %s do not broadcast together" % (
            tuple(x.shape), [tuple(c.shape) for c in compatible])) from None
    if tuple(shape) == tuple(x.shape):
        return apply("identity", [x], name=name)
    lead = len(shape) - len(x.shape)
    y = x if lead == 0 else apply("reshape", [x], {"shape": (1,) * lead + tuple(x.shape)},
                                  name=None if name is None else name + "_reshape")
    like = apply("constant", [], {"value": 0, "dtype": x.dtype, "shape": tuple(shape)},
                 name=None if name is None else name + "_like")
    return apply("broadcast_like", [y, like], name=name)


def reduced_shape_elem_cnt(input_blob, axis=None, dtype=None, name=None):
    """The number of elements of input_blob over `axis` (every axis when None), as a (1,) blob of `dtype`
    (int32 by default, OneFlow's shape_elem_cnt)."""
    import numpy as np

    shape = input_blob.shape
    axes = range(len(shape)) if axis is None else [a % len(shape) for a in axis]
    if axis is not None:
        assert isinstance(axis, (tuple, list))
    count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    dt = dtypes.as_dtype(dtype) or dtypes.int32
    if input_blob.is_dynamic:
        return apply("shape_elem_cnt", [input_blob], {"axis": None if axis is None else tuple(axes), "dtype": dt},
                     name=name)
    return apply("constant", [], {"value": count, "dtype": dt, "shape": (1,)}, name=name)


def sigmoid_grad(y, dy, name=None):
    """dy · y (1 - y): the gradient of sigmoid from its output y."""
    return apply("sigmoid_grad", [dy, y], name=name)


def gelu_grad(x, dy, name=None):
    """dy · GELU'(x), from the forward input x."""
    return apply("gelu_grad", [dy, x], name=name)


def softmax_grad(y, dy, axis=None, name=None):
    """flow.nn.softmax_grad: the gradient of softmax along `axis` (default -1) from its output y and dy."""
    return apply("softmax_grad", [dy, y], {"axis": -1 if axis is None else int(axis)}, name=name)


# --- v0.4.0 additions (math_ops.py, domain_ops.py at v0.4.0) ---------------------------------------------------------
def fused_scale_tril_softmax_dropout(x, diagonal=0, fill_value=0, scale=1, rate=0.0, noise_shape=None, seed=None,
                                     name=None):
    """softmax(tril(x · scale, diagonal, fill_value)) along the last axis, then dropout at `rate` (kept values
    scaled by 1 / (1 - rate)). As OneFlow v0.4.0, the mask is drawn whatever the job's type (its
    `fused_tril_scale_softmax_mask_scale` op takes a `random_mask_like` mask); here the three steps are the ops
    fused_scale_tril, softmax and dropout, whose gradients compose."""
    x = _blob(x, "flow.math.fused_scale_tril_softmax_dropout")
    assert rate is not None and 0.0 <= rate < 1.0
    ctx = builder.current("flow.math.fused_scale_tril_softmax_dropout")
    if name is None:
        name = ctx.job.unique_name("FusedTrilScaleSoftmaxMaskScale_")
    if noise_shape is not None:
        raise AssertionError("noise_shape will be supported later.")
    y = apply("fused_scale_tril", [x], {"diagonal": int(diagonal), "fill_value": _fill(fill_value),
                                        "scale": _fill(scale)}, name=name + "-scale_tril")
    y = apply("softmax", [y], {"axis": -1}, name=name + "-softmax")
    if rate == 0.0:
        return y
    out = apply("dropout", [y], {"rate": float(rate), "seed": seed}, name=name)
    return out[0]


def fused_self_attention_query_mul_key_and_value(x, head_size, alpha=1.0, name=None):
    """hidden_states (seq_len, batch, num_heads · 3 · head_size), laid out (seq, batch, heads, 3, head_size) ->
    (query · keyᵀ · alpha of shape (batch, heads, seq, seq), value of shape (batch, heads, seq, head_size)), as
    OneFlow v0.4.0's fused op (`oneflow/user/ops/fused_self_attention_query_mul_key_and_value_ops.cpp`), here
    composed of reshape, transpose, slice and batch matmul (their gradients compose)."""
    x = _blob(x, "flow.nn.fused_self_attention_query_mul_key_and_value")
    ctx = builder.current("flow.nn.fused_self_attention_query_mul_key_and_value")
    if name is None:
        name = ctx.job.unique_name("FusedSelfAttentionQueryMulKeyAndValue_")
    head_size = int(head_size)
    if len(x.shape) != 3 or x.is_dynamic:
        raise ValueError("%s: hidden_states must be a static 3-d blob (seq_len, batch_size, hidden_size), got %s"
                         % (name, x.shape))
    seq, batch, hidden = x.shape
    if head_size <= 0 or hidden % (head_size * 3):
        raise ValueError("%s: hidden_size %d is not a multiple of 3 · head_size (%d)" % (name, hidden, head_size))
    heads = hidden // (head_size * 3)
    h = apply("reshape", [x], {"shape": (seq, batch, heads, 3, head_size)}, name=name + "-reshape")
    h = apply("transpose", [h], {"perm": (3, 1, 2, 0, 4)}, name=name + "-transpose")  # (3, b, n, s, hs)
    parts = []
    for k, part in enumerate(("query", "key", "value")):
        p = apply("slice", [h], {"slice_tup": ((k, k + 1, 1),) + ((None, None, None),) * 4},
                  name="%s-%s" % (name, part))
        parts.append(apply("reshape", [p], {"shape": (batch, heads, seq, head_size)},
                           name="%s-%s_reshape" % (name, part)))
    q, k, v = parts
    qmk = apply("matmul", [q, k], {"transpose_a": False, "transpose_b": True, "alpha": float(alpha)},
                name=name + "-query_mul_key")
    return qmk, v
