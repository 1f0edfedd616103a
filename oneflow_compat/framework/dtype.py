"""`oneflow.framework.dtype` (OneFlow 0.9): the dtype class and the numpy conversions (flowvision's transforms use
`convert_oneflow_dtype_to_numpy_dtype`)."""
import numpy as np

from oneflow_compat.ir import dtypes
from oneflow_compat.ir.dtypes import DType as dtype  # noqa: F401


def convert_oneflow_dtype_to_numpy_dtype(oneflow_dtype):
    d = dtypes.as_dtype(oneflow_dtype) if not isinstance(oneflow_dtype, dtypes.DType) else oneflow_dtype
    if d.np is None or d.np == np.dtype(object):
        raise NotImplementedError("dtype %s has no numpy counterpart" % (d,))
    return d.np.type


def convert_numpy_dtype_to_oneflow_dtype(numpy_dtype):
    if np.dtype(numpy_dtype) == np.bool_:
        from oneflow_compat.runtime import global_eager

        return global_eager._dtype_named("bool", None)  # the global API's flow.bool (registered by it)
    return dtypes.from_numpy(numpy_dtype)
