"""OneFlow 0.9's creation functions shaped like a given tensor: `randn_like`, `randint_like` and the functional form
`flow.new_ones(x, size=None, ...)` (docs/source/oneflow.rst at v0.9.0).

Signatures are OneFlow v0.9.0's: functional_api.yaml `randn_like(input, *, dtype, device | placement, sbp,
generator, requires_grad)`, `randint_like(x, [low,] high, *, ...)`; python/oneflow/nn/modules/constant.py
`new_ones_op(x, size=None, dtype=None, device=None, placement=None, sbp=None, requires_grad=False)`. The new
tensor takes the input's shape, dtype and device, or, for a global input, its placement and SBP, unless given.
The values come from the same generators as randn / randint (global tensors: the same numbers on N devices as on
one).
"""
from oneflow_compat.ir import dtypes
from oneflow_compat._global import creation
from oneflow_compat._global.creation_new import new_constant
from oneflow_compat._global.tensor import Tensor, as_dtype


def _where(input, device, placement, sbp, what):  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError("%s(): input must be a Tensor, got %s" % (what, type(input).__name__))
    if placement is None and sbp is None and device is None:
        if input.is_global:
            return None, input.placement, list(input.sbp)
        return input._device, None, None
    if (placement is None) != (sbp is None):
        raise ValueError("%s(): placement and sbp must be given together" % what)
    return device, placement, sbp


def randn_like(input, *, dtype=None, generator=None, device=None, placement=None, sbp=None,  # noqa: A002
               requires_grad=False):
    """Standard normal values shaped like input (its dtype unless `dtype`, which must be floating)."""
    device, placement, sbp = _where(input, device, placement, sbp, "randn_like")
    dt = as_dtype(dtype) or input.dtype
    if not dt.is_floating:
        raise TypeError("randn_like(): dtype must be floating, got %s" % dt.name)
    return creation.randn(*tuple(input.shape), generator=generator, dtype=dt, device=device, placement=placement,
                          sbp=sbp, requires_grad=requires_grad)


def randint_like(input, *args, low=None, high=None, dtype=None, generator=None, device=None,  # noqa: A002
                 placement=None, sbp=None, requires_grad=False):
    """Integers drawn uniformly from [low, high) shaped like input: `randint_like(x, high)` or
    `randint_like(x, low, high)` (int64 unless `dtype`, as OneFlow's RandIntLike)."""
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif len(args) > 2:
        raise TypeError("randint_like() takes (input, [low,] high), got %d positional values" % len(args))
    if high is None:
        raise TypeError("randint_like() missing the required argument 'high'")
    device, placement, sbp = _where(input, device, placement, sbp, "randint_like")
    return creation.randint(0 if low is None else int(low), int(high), tuple(input.shape), generator=generator,
                            dtype=as_dtype(dtype) or dtypes.int64, device=device, placement=placement, sbp=sbp,
                            requires_grad=requires_grad)


def new_ones(x, size=None, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    """Ones of `size` (x's shape when None) with x's dtype and layout unless given, as OneFlow 0.9's
    `flow.new_ones(x, ...)`: the helper of new_zeros / new_full / new_empty (`creation_new.new_constant`), so a
    global x lends its placement and its sbp (nn/modules/constant.py `_handle_meta_args`)."""
    return new_constant(x, size, 1, dtype, device, placement, sbp, requires_grad, "new_ones")
