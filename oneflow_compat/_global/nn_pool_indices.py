"""OneFlow 0.9's pooling with indices for tensors: `return_indices=True` of `max_pool1d/2d/3d` and `nn.MaxPool*d`
(through `max_pool_with_indices`), `flow.nn.AdaptiveMaxPool1d/2d/3d` and `nn.functional.adaptive_max_pool*d`
(python/oneflow/nn/modules/pooling.py, nn/functional/functional_maxpool.py), `flow.nn.MaxUnpool1d/2d/3d` and
`nn.functional.max_unpool*d` / `flow._C.max_unpool*d` (MaxUnpoolNDFunctor, nn_functor.cpp), on the ops of
ops/pool_index_ops.py. Indices are int64 flat positions within each (n, c) plane, as OneFlow's and PyTorch's.
"""
from oneflow_compat._global import functional as F
from oneflow_compat._global.dispatch import apply_op, apply_op_list
from oneflow_compat._global.modules import Module


def _check(x, nd, what):
    F._check(x, what)
    if x.ndim != nd + 2:
        raise ValueError("%s: expected a %d-D input (batch, channels, %d spatial), got shape %s"
                         % (what, nd + 2, nd, tuple(x.shape)))
    return x


def max_pool_with_indices(nd, x, k, s, p, d, ceil_mode):
    """(y, indices) of the `max_pool_Nd` op; the caller has checked and normalized the arguments."""
    y, ind = apply_op_list("max_pool_%dd" % nd, [x], {"ksize": k, "strides": s, "pads": tuple((v, v) for v in p),
                                                      "ceil_mode": bool(ceil_mode), "dilations": d})
    return y, ind


# --- adaptive max pooling -----------------------------------------------------------------------------------------
def _output_size(nd, x, output_size):
    if output_size is None:
        raise AssertionError("'output_size' cannot be NoneType")
    size = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    if len(size) == 1 and nd > 1:
        size = size * nd
    if len(size) != nd:
        raise AssertionError("the length of 'output_size' does not match the input size, %d expected" % nd)
    # None keeps the input's size along that axis (OneFlow's _generate_output_size)
    return tuple(x.shape[2 + i] if v is None else int(v) for i, v in enumerate(size))


def _adaptive_max(nd, input, output_size, return_indices):  # noqa: A002
    x = _check(input, nd, "adaptive_max_pool%dd" % nd)
    y, ind = apply_op_list("adaptive_max_pool%dd" % nd, [x], {"output_size": _output_size(nd, x, output_size)})
    return (y, ind) if return_indices else y


def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    return _adaptive_max(1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    return _adaptive_max(2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002
    return _adaptive_max(3, input, output_size, return_indices)


class _AdaptiveMaxPoolNd(Module):
    nd = 2

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input):  # noqa: A002
        return _adaptive_max(self.nd, input, self.output_size, self.return_indices)

    def extra_repr(self):
        return "output_size={}".format(self.output_size)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    nd = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    nd = 2


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    nd = 3


# --- max unpooling -------------------------------------------------------------------------------------------------
def _int_list(value, nd, name):
    if isinstance(value, int):
        return (value,) * nd
    value = tuple(int(v) for v in value)
    if len(value) == 1 and nd > 1:
        value = value * nd
    if len(value) != nd:
        raise RuntimeError("`%s` must be an integer or a list of %d integers" % (name, nd))
    return value


def _max_unpool(nd, input, indices, kernel_size, stride, padding, output_size):  # noqa: A002
    what = "max_unpool%dd" % nd
    x = _check(input, nd, what)
    k = _int_list(kernel_size, nd, "kernel_size")
    s = _int_list(stride, nd, "stride") if stride is not None else k
    p = _int_list(padding, nd, "padding")
    for name, values in (("kernel_size", k), ("stride", s)):
        for v in values:
            if v <= 0:
                raise RuntimeError("each element in `%s` must be greater than 0, got %d" % (name, v))
    if any(kk < 2 * pp for kk, pp in zip(k, p)):
        raise RuntimeError("pad should be smaller than half of kernel size")
    spatial = tuple(x.shape[2:])
    if output_size is None:
        out = tuple((n - 1) * ss - 2 * pp + kk for n, ss, pp, kk in zip(spatial, s, p, k))
    else:
        out = tuple(int(v) for v in output_size)
        # OneFlow takes the whole output shape; PyTorch also the spatial sizes alone
        if len(out) == nd + 2:
            if out[:2] != tuple(x.shape[:2]):
                raise RuntimeError("%s: output_size %s does not keep the input's batch and channels %s"
                                   % (what, out, tuple(x.shape[:2])))
            out = out[2:]
        if len(out) != nd:
            raise RuntimeError("%s: output_size must have %d or %d elements, got %s" % (what, nd, nd + 2,
                                                                                       tuple(output_size)))
    return apply_op("max_unpool_%dd" % nd, [x, indices], {"output_size": out})


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


class _MaxUnpoolNd(Module):
    nd = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, x, indices, output_size=None):
        return _max_unpool(self.nd, x, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    nd = 2


class MaxUnpool3d(_MaxUnpoolNd):
    nd = 3
