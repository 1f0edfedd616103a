"""`flow.finfo` and `flow.iinfo`: the numerical properties of a floating / integer dtype (OneFlow 0.9's
docs/source/type_info.rst; the attributes, errors and printed form are those of v0.9.0
oneflow/api/python/framework/typeinfo.cpp).

finfo: bits, eps, max, min (the lowest value, -max), tiny (the smallest positive normal), resolution
(10 ** -digits10), dtype (the name without `oneflow.`); `flow.finfo()` is float32's. iinfo: bits, max, min, dtype.
Both print as OneFlow's C++ stream does (6 significant digits, `%g`).
"""
import numpy as np

from oneflow_compat.ir import dtypes


def _dtype_arg(type_, what):
    if not isinstance(type_, dtypes.DType):
        raise TypeError("%s(): argument 'type' must be oneflow.dtype, but found %s" % (what, type(type_)))
    return type_


class _DTypeInfo:
    __slots__ = ("_dtype",)

    @property
    def bits(self):
        return int(self._dtype.np.itemsize * 8)

    @property
    def dtype(self):
        return self._dtype.name


class finfo(_DTypeInfo):  # noqa: N801 (OneFlow's class name)
    """The numerical properties of a floating point dtype (float16, float32, float64)."""

    def __init__(self, type=dtypes.float32):  # noqa: A002 (OneFlow's keyword)
        dt = _dtype_arg(type, "finfo")
        if not dt.is_floating:
            raise TypeError("oneflow.finfo() requires a float input type. Use oneflow.iinfo to handle '%r' " % dt)
        self._dtype = dt

    @property
    def _np(self):
        return np.finfo(self._dtype.np)

    @property
    def max(self):
        return float(self._np.max)

    @property
    def min(self):
        return float(self._np.min)

    @property
    def eps(self):
        return float(self._np.eps)

    @property
    def tiny(self):
        return float(self._np.tiny)

    @property
    def resolution(self):
        return float(10.0 ** -self._np.precision)  # std::numeric_limits<T>::digits10 == numpy's precision

    def __repr__(self):
        return "finfo(resolution=%g, min=%g, max=%g, eps=%g, tiny=%g, dtype=%r, bits=%d)" % (
            self.resolution, self.min, self.max, self.eps, self.tiny, self._dtype, self.bits)

    __str__ = __repr__


class iinfo(_DTypeInfo):  # noqa: N801
    """The numerical properties of an integer dtype (uint8, int8, int32, int64)."""

    def __init__(self, type):  # noqa: A002
        dt = _dtype_arg(type, "iinfo")
        if dt.is_floating:
            raise TypeError("oneflow.iinfo() requires an integer input type. Use oneflow.finfo to handle '%r' " % dt)
        self._dtype = dt

    def _limits(self):
        if self._dtype.np is None or self._dtype.np.kind not in "iu":
            raise RuntimeError("%r not supported by oneflow.iinfo" % self._dtype)
        return np.iinfo(self._dtype.np)

    @property
    def max(self):
        return int(self._limits().max)

    @property
    def min(self):
        return int(self._limits().min)

    def __repr__(self):
        return "iinfo(min=%d, max=%d, dtype=%r, bits=%d)" % (self.min, self.max, self._dtype, self.bits)

    __str__ = __repr__
