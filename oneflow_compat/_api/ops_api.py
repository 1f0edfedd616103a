"""Top-level op functions of `flow.*` (reshape, matmul, constant, get_variable, watch, parallel_cast, …)."""
from oneflow_compat import distribute as dist
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ops import variable_ops
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import LazyBlob
from oneflow_compat.ops.registry import apply, new_op


def reshape(x, shape, name=None):
    if not isinstance(shape, (list, tuple)):
        raise TypeError("flow.reshape: shape must be a list or tuple, got %r" % (shape,))
    return apply("reshape", [x], {"shape": tuple(int(d) for d in shape)}, name=name)


def reshape_like(x, like, name=None):
    return apply("reshape_like", [x, like], name=name)


def matmul(a, b, transpose_a=False, transpose_b=False, alpha=1.0, name=None):
    # OneFlow v0.4.0 (ops/linalg.py): blobs of different ranks take broadcast_matmul, which needs a 2-D b and no
    # transpose of a; equal ranks are matmul / batch_matmul (one op here)
    if len(a.shape) != len(b.shape):
        if len(b.shape) != 2 or len(a.shape) < 2:
            raise ValueError("flow.matmul: a of shape %s and b of shape %s: of blobs of different ranks only an a of "
                             "rank > 2 times a 2-D b is supported (OneFlow's broadcast_matmul)"
                             % (tuple(a.shape), tuple(b.shape)))
        if transpose_a:
            raise ValueError("flow.matmul: transpose_a is not supported when b (2-D) is broadcast to a %s"
                             % (tuple(a.shape),))
        return apply("broadcast_matmul", [a, b], {"transpose_a": False, "transpose_b": bool(transpose_b),
                                                  "alpha": float(alpha)}, name=name)
    return apply("matmul", [a, b], {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b),
                                    "alpha": float(alpha)}, name=name)


def identity(x, name=None):
    return apply("identity", [x], name=name)


def constant(value, dtype=None, shape=None, name=None):
    dtype = dtypes.as_dtype(dtype) or dtypes.float32
    shape = (1,) if shape is None else tuple(shape)
    return apply("constant", [], {"value": value, "dtype": dtype, "shape": shape}, name=name)


def constant_scalar(value, dtype=None, name=None):
    return constant(value, dtype, (1,), name)


def zeros(shape, dtype=None, name=None):
    return constant(0, dtype, shape, name)


def ones(shape, dtype=None, name=None):
    return constant(1, dtype, shape, name)


def constant_like(like, value, dtype=None, name=None):
    out = apply("fill_like", [like], {"value": float(value)}, name=name)
    return out if dtype is None else apply("cast", [out], {"dtype": dtypes.as_dtype(dtype)})


def zeros_like(like, dtype=None, name=None):
    return constant_like(like, 0, dtype, name)


def ones_like(like, dtype=None, name=None):
    return constant_like(like, 1, dtype, name)


def cast(x, dtype, name=None):
    dtype = dtypes.as_dtype(dtype)
    if x.dtype is dtype:  # OneFlow returns the blob itself (math_ops.cast)
        return x
    return apply("cast", [x], {"dtype": dtype}, name=name)


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=None,
                 model_name=None, random_seed=None, parallel_distribution=None, distribute=None, reuse=True):
    sbp = None
    if parallel_distribution is not None:
        # one entry per dimension of the scope's placement hierarchy (v0.4.0); [] means no hint
        sbp = dist.to_parallel_distribution(parallel_distribution, builder.current("flow.get_variable").placement,
                                            "flow.get_variable('%s')" % name)
    elif distribute is not None:
        sbp = dist.to_sbp(distribute)
    return variable_ops.get_variable(name, shape, dtype, initializer, regularizer, trainable, model_name,
                                     random_seed, sbp, reuse)


def watch(blob_watched, handler_or_prompt=None):
    from oneflow_compat.runtime import watch as w

    handler, kind = w.check_handler(handler_or_prompt)
    ctx = builder.current("flow.watch")
    ctx.placements.append(blob_watched.op.placement)
    ctx.views.append(blob_watched.op.view)
    try:
        new_op("watch", [_plain(blob_watched)], {"handler": handler, "kind": kind,
                                                 "what": blob_watched.logical_blob_name})
    finally:
        ctx.placements.pop()
        ctx.views.pop()


def watch_diff(blob_watched, handler_or_prompt=None):
    from oneflow_compat.runtime import watch as w

    handler, kind = w.check_handler(handler_or_prompt)
    ctx = builder.current("flow.watch_diff")
    if not ctx.job.is_train:
        raise RuntimeError("flow.watch_diff can only be used in a train job (job '%s' is '%s')" % (
            ctx.job.name, ctx.job.type))
    ctx.job.diff_watches.append((blob_watched, _DiffHandler(handler, kind)))


class _DiffHandler:
    def __init__(self, handler, kind):
        self.handler, self.kind = handler, kind


def _plain(x):
    return LazyBlob(x.op, x.index, x.meta) if x.hint is not None else x


def parallel_cast(input, name=None, distribute=None, gradient_distribute=None):  # noqa: A002
    hint = dist.to_sbp(distribute)
    ghint = dist.to_sbp(gradient_distribute)
    op = new_op("identity", [_plain(input)], name=name,
                in_hints={0: hint} if hint is not None else None,
                out_hints={0: hint} if hint is not None else None)
    if ghint is not None:
        # the gradient flowing back into `input` is read with this SBP
        op.grad_hints[0] = ghint
    return op.outputs[0]


def cast_to_current_logical_view(x):
    ctx = builder.current("flow.cast_to_current_logical_view")
    if ctx.view == "mirrored" and x.op.view != "mirrored":
        return apply("cast_to_mirrored", [x])
    if ctx.view == "consistent" and x.op.view == "mirrored":
        return apply("cast_from_mirrored", [x])
    return x
