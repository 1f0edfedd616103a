"""OneFlow 0.9's top-level in-place functions and the function forms of a few Tensor methods: `flow.clamp_`,
`clamp_min_`, `clamp_max_`, `clip_`, `div_`, `erfinv_`, `masked_fill_`, `zero_`, `contiguous`, `to_global`,
`to_local` (v0.9.0 python/oneflow/__init__.py binds them from oneflow._C, framework/tensor.py and
nn/modules/global_cast.py).

Each in-place function IS the Tensor method's work (`_global/inplace.rebind`: the storage is updated when nothing
records gradients, else the tensor takes the result), so `flow.clamp_(x, 0, 1)` and `x.clamp_(0, 1)` are one
code path, on local and global tensors and inside nn.Graph.
"""
from oneflow_compat._global import functional as F
from oneflow_compat._global import inplace
from oneflow_compat._global import layouts
from oneflow_compat._global import tensor_functions as TF
from oneflow_compat._global.tensor import Tensor


def _input(input, what):  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError("%s(): argument 'input' must be Tensor, not %s" % (what, type(input).__name__))
    return input


def clamp_(input, min=None, max=None):  # noqa: A002
    """In place: every element clamped to [min, max] (one bound may be None)."""
    return inplace.rebind(input, F.clamp(_input(input, "clamp_"), min=min, max=max))


clip_ = clamp_  # OneFlow 0.9: `clip_` is the alias of `clamp_` (functional_api.yaml ClipInplace)


def clamp_min_(input, min):  # noqa: A002
    """In place: max(input, min)."""
    return inplace.rebind(input, F.clamp(_input(input, "clamp_min_"), min=min))


def clamp_max_(input, max):  # noqa: A002
    """In place: min(input, max)."""
    return inplace.rebind(input, F.clamp(_input(input, "clamp_max_"), max=max))


def div_(input, other):  # noqa: A002
    """In place: input / other (a tensor or a scalar)."""
    return inplace.rebind(input, F.div(_input(input, "div_"), other))


def erfinv_(input):  # noqa: A002
    """In place: the inverse error function."""
    return inplace.rebind(input, TF.erfinv(_input(input, "erfinv_")))


def masked_fill_(input, mask, value):  # noqa: A002
    """In place: `value` where mask is true."""
    return inplace.rebind(input, F.masked_fill(_input(input, "masked_fill_"), mask, value))


def zero_(input):  # noqa: A002
    """In place: every element 0 (OneFlow 0.9 framework/tensor.py `zero_`)."""
    return _input(input, "zero_").zero_()


def contiguous(input):  # noqa: A002
    """OneFlow's ToContiguous: a contiguous input as is, a non-contiguous view as a contiguous copy."""
    from oneflow_compat._global import views
    from oneflow_compat._global.dispatch import apply_op

    x = _input(input, "contiguous")
    if views.is_contiguous(x):
        return x
    out = apply_op("identity", [x])  # its gradient an identity
    return views.make(x, out, None)  # (the identity kernel relabels: `make` copies what shares memory, C-ordered)


def to_global(input, placement=None, sbp=None, **kwargs):  # noqa: A002
    """`input.to_global(placement, sbp, ...)`: a local tensor becomes global (placement and sbp both needed), a
    global one is boxed to the placement / sbp given (nn/modules/global_cast.py `to_global_op`)."""
    _input(input, "to_global")
    unknown = set(kwargs) - {"grad_sbp", "check_meta", "copy"}
    if unknown:
        raise TypeError("to_global() got an unexpected keyword argument '%s'" % sorted(unknown)[0])
    if input.is_local and (placement is None or sbp is None):
        raise ValueError("Converting a local tensor to global tensor must have placement and sbp parameters.")
    return layouts.to_global(input, placement, sbp, kwargs.get("grad_sbp"), kwargs.get("check_meta", True))


def to_local(input, *, copy=False):  # noqa: A002
    """This rank's piece of a global tensor (global_cast.py `to_local_op`)."""
    if not _input(input, "to_local").is_global:
        raise AssertionError("Expected global tensor for to_local but got local tensor!")
    return input.to_local(copy=copy)
