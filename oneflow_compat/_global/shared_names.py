"""Names both APIs use (`flow.matmul`, `flow.reshape`, `flow.zeros`, …) dispatch on their arguments: a `Tensor`
goes to the modern op, a legacy `LazyBlob` to the legacy function unchanged. Creators without tensor arguments
(`zeros`, `ones`) are legacy while a legacy job function's body is being built, modern otherwise."""
import functools

from oneflow_compat._api import array_api as legacy_array
from oneflow_compat._api import ops_api as legacy_ops
from oneflow_compat.ir import builder
from oneflow_compat._global import creation, functional as F
from oneflow_compat._global.tensor import Tensor


def _has_tensor(args, kwargs):
    if args and isinstance(args[0], Tensor):  # the common case, first
        return True
    for a in args:
        if isinstance(a, Tensor) or (isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a)):
            return True
    for a in kwargs.values():
        if isinstance(a, Tensor) or (isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a)):
            return True
    return False


def _modern_kwargs(kwargs, renames):
    out = {}
    for k, v in kwargs.items():
        if k == "name":
            continue  # the legacy op-name argument means nothing to an eager op
        out[renames.get(k, k)] = v
    return out


def on_tensors(legacy, modern, renames=None):
    """`modern` when an argument is a Tensor, else `legacy`."""
    renames = renames or {}

    @functools.wraps(legacy)
    def dispatch(*args, **kwargs):
        if not kwargs and args and isinstance(args[0], Tensor):  # the common call, decided at once
            return modern(*args)
        if _has_tensor(args, kwargs):
            return modern(*args, **_modern_kwargs(kwargs, renames))
        return legacy(*args, **kwargs)

    dispatch.legacy, dispatch.modern = legacy, modern
    return dispatch


def in_job(legacy, modern):
    """`legacy` inside a legacy job function's body (or with a Tensor-free legacy call there), else `modern`."""

    @functools.wraps(modern)
    def dispatch(*args, **kwargs):
        if builder.current_or_none() is not None and not _has_tensor(args, kwargs):
            return legacy(*args, **kwargs)
        return modern(*args, **kwargs)

    dispatch.legacy, dispatch.modern = legacy, modern
    return dispatch


matmul = on_tensors(legacy_ops.matmul, F.matmul, {"a": "input", "b": "other"})
reshape = on_tensors(legacy_ops.reshape, F.reshape)
cast = on_tensors(legacy_ops.cast, F.cast)
zeros_like = on_tensors(legacy_ops.zeros_like, creation.zeros_like)
ones_like = on_tensors(legacy_ops.ones_like, creation.ones_like)
transpose = on_tensors(legacy_array.transpose, F.transpose)
flatten = on_tensors(legacy_array.flatten, F.flatten)
gather = on_tensors(legacy_array.gather, F.gather)
where = on_tensors(legacy_array.where, F.where)
concat = on_tensors(legacy_array.concat, F.cat, {"axis": "dim", "inputs": "tensors", "values": "tensors"})
squeeze = on_tensors(legacy_array.squeeze, F.squeeze, {"axis": "dim"})
stack = on_tensors(legacy_array.stack, F.stack, {"axis": "dim", "inputs": "tensors"})
clamp = on_tensors(legacy_array.clamp, F.clamp, {"min_value": "min", "max_value": "max", "values": "input"})
clip = on_tensors(legacy_array.clip, F.clamp, {"min_value": "min", "max_value": "max", "values": "input"})
masked_fill = on_tensors(legacy_array.masked_fill, F.masked_fill)
one_hot = on_tensors(legacy_array.one_hot, F.one_hot, {"depth": "num_classes", "indices": "input"})
zeros = in_job(legacy_ops.zeros, creation.zeros)
ones = in_job(legacy_ops.ones, creation.ones)


# --- issue 21: OneFlow 0.9 tensor functions whose names the legacy API may also bind (sort, argsort, argwhere,
# nonzero, expand, tril, ... on the legacy branch): a Tensor argument takes the modern function, anything else the
# legacy function of that name where the legacy API has one (looked up when called, so the binding order of the
# two APIs' names does not matter)
def modern_or_legacy(name, modern):
    @functools.wraps(modern)
    def dispatch(*args, **kwargs):
        if _has_tensor(args, kwargs):
            return modern(*args, **kwargs)
        from oneflow_compat._api import legacy_names

        legacy = getattr(legacy_names, name, None)
        if legacy is None or getattr(legacy, "modern", None) is modern:
            return modern(*args, **kwargs)  # (raises the modern function's own error for a wrong argument)
        return legacy(*args, **kwargs)

    dispatch.modern = modern
    return dispatch


# --- OneFlow 0.9's forms of legacy-named tensor functions (`_global/nd_functions.py`); the renames map the legacy
# argument names a keyword call may use onto 0.9's
def _nd_functions():
    from oneflow_compat._api import legacy_array_api as legacy_nd, legacy_math
    from oneflow_compat._global import nd_functions as nd

    return {
        "gather_nd": on_tensors(legacy_nd.gather_nd, nd.gather_nd, {"params": "input", "indices": "index"}),
        "scatter_nd": on_tensors(legacy_nd.scatter_nd, nd.scatter_nd, {"indices": "index", "updates": "update"}),
        "tensor_scatter_nd_update": on_tensors(legacy_nd.tensor_scatter_nd_update, nd.tensor_scatter_nd_update,
                                               {"params": "tensor"}),
        "slice_update": on_tensors(legacy_nd.slice_update, nd.slice_update, {"x": "input"}),
        "slice": on_tensors(legacy_array.slice, nd.slice, {"x": "input"}),
        "broadcast_like": on_tensors(legacy_array.broadcast_like, nd.broadcast_like, {"x": "input"}),
        "diag": on_tensors(legacy_nd.diag, nd.diag),
        "in_top_k": on_tensors(legacy_math.in_top_k, nd.in_top_k),
    }


ND_FUNCTIONS = _nd_functions()
