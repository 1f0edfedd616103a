"""OneFlow 0.9's `nn.Unfold` / `nn.Fold` and `nn.functional.unfold` / `fold` (im2col / col2im; issue 21, the nnextra
helper): one op each (ops/nn_extra_ops.py), each the other's gradient, through `dispatch.apply_op`: eager, inside
`nn.Graph`, local or global (batch split).

Signatures, defaults, the 4-D-only restriction and reprs are OneFlow v0.9.0's (python/oneflow/nn/modules/fold.py,
`functional_api.yaml`: `unfold(x, kernel_size, dilation=1, padding=0, stride=1)`, `fold(x, output_size,
kernel_size, dilation=1, padding=0, stride=1)`); an int stands for the same value on both spatial axes.
"""
from oneflow_compat._global import functional as F, views
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.modules import Module


def _pair(v, what, name):
    if isinstance(v, int):
        return (v, v)
    v = tuple(v)
    if len(v) != 2 or not all(isinstance(e, int) for e in v):
        raise ValueError("%s: %s must be an int or a pair of ints, got %r" % (what, name, v))
    return v


def _window(what, kernel_size, dilation, padding, stride):
    return {"kernel_size": _pair(kernel_size, what, "kernel_size"), "dilation_rate": _pair(dilation, what, "dilation"),
            "padding": _pair(padding, what, "padding"), "strides": _pair(stride, what, "stride")}


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """(N, C, H, W) -> (N, C * kh * kw, L): the sliding blocks as columns."""
    x = F._check(input, "unfold")
    return apply_op("unfold", [x], _window("unfold", kernel_size, dilation, padding, stride))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """(N, C * kh * kw, L) -> (N, C, H, W): the columns summed back onto their blocks."""
    x = F._check(input, "fold")
    attrs = _window("fold", kernel_size, dilation, padding, stride)
    attrs["output_size"] = _pair(output_size, "fold", "output_size")
    return apply_op("fold", [x], attrs)


class Fold(Module):
    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):  # noqa: A002
        return fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return ("output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, padding={padding}, "
                "stride={stride}".format(**self.__dict__))


class Unfold(Module):
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):  # noqa: A002
        return unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return ("kernel_size={kernel_size}, dilation={dilation}, padding={padding},"
                " stride={stride}".format(**self.__dict__))


# --- Tensor.unfold (the leftovers helper): sliding windows along one dimension, OneFlow's `unfold_tensor` ---------
def unfold_tensor(x, dimension, size, step):
    """`Tensor.unfold(dimension, size, step)` / `flow._C.unfold_tensor`: every slice of `size` entries along
    `dimension`, `step` apart, as a new last axis; `dimension` holds (n - size) // step + 1 of them (OneFlow
    v0.9.0 functional_api.yaml `unfold_tensor(Tensor x, Int32 dimension, Int32 size, Int32 step)`,
    framework/tensor_methods.cpp `view::UnfoldTensor`). As in OneFlow, `dimension` is not wrapped: a negative
    one is an error. Differentiable (the op `unfold_tensor_grad` adds each window back); on global tensors a split
    on another axis passes through."""
    x = F._check(x, "unfold")
    for name, v in (("dimension", dimension), ("size", size), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("unfold(): %s must be an int, got %s" % (name, type(v).__name__))
    if dimension < 0:
        raise RuntimeError("unfold(): dimension should be >= 0, but got %d (OneFlow does not wrap negative "
                           "dimensions here)" % dimension)
    if dimension > max(x.ndim - 1, 0):
        raise RuntimeError("unfold(): dimension should be <= %d for a %d-d tensor, but got %d"
                           % (max(x.ndim - 1, 0), x.ndim, dimension))
    longest = x.shape[dimension] if x.ndim else 1
    if size <= 0 or size > longest:
        raise RuntimeError("unfold(): size should be > 0 and <= %d (the size of dimension %d), but got %d"
                           % (longest, dimension, size))
    if step <= 0:
        raise RuntimeError("unfold(): step should be > 0, but got %d" % step)
    # a view of a local eager input (`view::UnfoldTensor`)
    lay = views.unfold_layout(views.layout_of(x), int(dimension), int(size), int(step)) \
        if views.applicable(x) else None
    out = F.free_view(x, lay)
    if out is not None:
        return out
    out = apply_op("unfold_tensor", [x], {"dimension": int(dimension), "size": int(size), "step": int(step)})
    return views.make(x, out, lay)
