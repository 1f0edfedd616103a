"""The default floating dtype of the creation functions (`flow.set_default_dtype`, `flow.get_default_dtype`;
`flow.set_default_tensor_type` and the tensor types are in `tensor_types.py`).

Facts from OneFlow v0.9.0: `oneflow/core/framework/dtype.cpp` (SetDefaultDType accepts floating dtypes only, with
"only floating-point types are supported as the default type"; the default is float32). The default is
process-wide, as OneFlow's (a mutex-guarded static there).

What reads the default: `flow.ones/zeros/empty/full` (a float fill value), `flow.rand/randn/normal`,
`flow.logspace`, `flow.Tensor(...)`, and `flow.tensor(data)` of Python floats (OneFlow 0.9
`tensor_utils.cpp`: a float sequence keeps float64 when that is the default, else becomes float32).
"""
from oneflow_compat.ir import dtypes

_STATE = {"dtype": dtypes.float32}

_DEFAULT_ERROR = "only floating-point types are supported as the default type"


def get_default_dtype():
    """The default floating dtype of the creation functions (float32 unless set)."""
    return _STATE["dtype"]


def set_default_dtype(dtype):
    """Sets the default floating dtype of the creation functions; only floating dtypes are accepted."""
    if not isinstance(dtype, dtypes.DType):
        raise TypeError("set_default_dtype(): expected a oneflow.dtype (flow.float64, ...), got %r" % (dtype,))
    set_floating(dtype)


def set_floating(dtype):
    if not dtype.is_floating:
        raise RuntimeError(_DEFAULT_ERROR)
    _STATE["dtype"] = dtype


def sequence_float_dtype():
    """The dtype of `flow.tensor(python floats)` without a dtype: float64 when that is the default, else float32
    (OneFlow 0.9's MakeLocalTensorFromData casts to kFloat whenever the default differs from numpy's float64)."""
    return dtypes.float64 if _STATE["dtype"] is dtypes.float64 else dtypes.float32
