"""OneFlow 0.9's top-level `flow.new_zeros(x, size=None, ...)`, `flow.new_full(x, size, fill_value, ...)` and
`flow.new_empty(x, size, ...)` (v0.9.0 python/oneflow/nn/modules/constant.py `new_zeros_op` / `new_full_op`,
nn/modules/empty.py `new_empty_op`), all through one helper, `new_constant`.

The new tensor has `size` (x's shape when None or empty, for new_zeros / new_ones), x's dtype unless `dtype`, and
x's layout unless given (`_handle_meta_args`, which `creation.like_layout` implements): a local x's device, a
global x's placement AND sbp; a device excludes placement and sbp; a placement without sbp (or the reverse)
takes the global x's other half. The size may be given as one tuple / list / flow.Size or as ints.
"""
from oneflow_compat._global import creation
from oneflow_compat._global.tensor import Tensor, as_dtype


def _size_of(x, size, what, may_default):
    if size is None or (isinstance(size, (tuple, list)) and len(size) == 0):
        if not may_default:
            raise AssertionError("size of tensor doesn't exists")
        return tuple(x.shape)
    if isinstance(size, int):
        size = (size,)
    return creation._size(tuple(size), what)


def new_constant(x, size, value, dtype=None, device=None, placement=None, sbp=None, requires_grad=False,
                 what="new_full", may_default=True):
    """A tensor of `size` filled with `value`, laid out like `x` unless told (the shared body of new_zeros,
    new_ones, new_full and new_empty)."""
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument 'x' must be Tensor, not %s" % (what, type(x).__name__))
    if not isinstance(requires_grad, bool):
        raise AssertionError("argument 'requires_grad' must be bool, not %s" % type(requires_grad))
    shape = _size_of(x, size, what, may_default)
    dt = as_dtype(dtype) or x.dtype
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise AssertionError("new_full(): argument 'fill_value' must be Number, not Tensor")
        value = value.item()
    device, placement, sbp = creation.like_layout(x, device, placement, sbp, what)
    if placement is not None:
        return creation._constant(shape, value, dt, None, placement, sbp, requires_grad, what)
    return creation._constant(shape, value, dt, device, None, None, requires_grad, what)


def new_zeros(x, size=None, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    """Zeros of `size` (x's shape when None) with x's dtype and layout unless given."""
    return new_constant(x, size, 0, dtype, device, placement, sbp, requires_grad, "new_zeros")


def new_full(x, size, fill_value, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    """`fill_value` (a number or a 0-d tensor) in a tensor of `size` with x's dtype and layout unless given."""
    return new_constant(x, size, fill_value, dtype, device, placement, sbp, requires_grad, "new_full",
                        may_default=False)


def new_empty(x, size, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    """An uninitialised tensor of `size` with x's dtype and layout unless given (zeros here, as flow.empty)."""
    return new_constant(x, size, 0, dtype, device, placement, sbp, requires_grad, "new_empty", may_default=False)
