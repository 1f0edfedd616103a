"""The default floating dtype of the creation functions (`flow.set_default_dtype`, `flow.get_default_dtype`,
`flow.set_default_tensor_type`) and OneFlow 0.9's tensor types (`flow.FloatTensor`, `flow.BoolTensor`, ... and
their `oneflow.cuda.*` twins, the names `Tensor.type()` answers with).

Facts from OneFlow v0.9.0: `oneflow/core/framework/dtype.cpp` (SetDefaultDType accepts floating dtypes only, with
"only floating-point types are supported as the default type"; the default is float32),
`oneflow/api/python/framework/dtype.cpp` (set_default_tensor_type takes a tensor type, else TypeError "invalid
type object"), `python/oneflow/framework/dtype.py` (a string is resolved as a dotted name),
`oneflow/api/python/framework/tensortype.cpp` (the types, their names, "invalid type: NAME" for unknown strings;
calling one builds a tensor as `flow.Tensor(...)` does, then converts it to the type's dtype and device).
The default is process-wide, as OneFlow's (a mutex-guarded static there).

What reads the default: `flow.ones/zeros/empty/full` (a float fill value), `flow.rand/randn/normal`,
`flow.logspace`, `flow.Tensor(...)`, and `flow.tensor(data)` of Python floats (OneFlow 0.9
`tensor_utils.cpp`: a float sequence keeps float64 when that is the default, else becomes float32).
"""
import numpy as np

from oneflow_compat.ir import dtypes

_STATE = {"dtype": dtypes.float32}

_DEFAULT_ERROR = "only floating-point types are supported as the default type"


def get_default_dtype():
    """The default floating dtype of the creation functions (float32 unless set)."""
    return _STATE["dtype"]


def set_default_dtype(dtype):
    """Sets the default floating dtype of the creation functions; only floating dtypes are accepted."""
    from oneflow_compat._global.tensor import as_dtype

    if isinstance(dtype, TensorType):
        raise TypeError("set_default_dtype(): expected a oneflow.dtype, got the tensor type %s (use "
                        "set_default_tensor_type)" % dtype.name)
    d = as_dtype(dtype)
    if not isinstance(d, dtypes.DType) or not d.is_floating:
        raise RuntimeError(_DEFAULT_ERROR)
    _STATE["dtype"] = d


def sequence_float_dtype():
    """The dtype of `flow.tensor(python floats)` without a dtype: float64 when that is the default, else float32
    (OneFlow 0.9's MakeLocalTensorFromData casts to kFloat whenever the default differs from numpy's float64)."""
    return dtypes.float64 if _STATE["dtype"] is dtypes.float64 else dtypes.float32


class TensorType:
    """A tensor type (`flow.FloatTensor`, `flow.cuda.LongTensor`, ...): calling it builds a tensor as
    `flow.Tensor(*args)` does (data, or a shape of uninitialised values), of its dtype and device."""

    def __init__(self, type_name, dtype, device_type):
        self.__name__ = type_name
        self.dtype = dtype
        self.device_type = device_type
        self.is_cuda = device_type == "cuda"
        self.name = ("oneflow.cuda." if self.is_cuda else "oneflow.") + type_name
        self.__doc__ = ("Creates a Tensor with the dtype of oneflow.%s and the device on %s, it has the same "
                        "parameters as :func:`oneflow.Tensor`" % (dtype.name, device_type))

    def __repr__(self):
        return "<class '%s'>" % self.name

    def __call__(self, *args, **kwargs):
        from oneflow_compat._global import creation
        from oneflow_compat._global.size import Size

        if "dtype" in kwargs:
            raise TypeError("%s(): the dtype is the type's own (%s); dtype= is not accepted"
                            % (self.name, self.dtype))
        device = kwargs.pop("device", None) or (self.device_type if self.is_cuda else None)
        if len(args) == 1 and not isinstance(args[0], (int, np.integer, Size)):
            return creation.tensor(args[0], dtype=self.dtype, device=device, **kwargs)
        shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
        return creation.zeros(*shape, dtype=self.dtype, device=device, **kwargs)


def _bool():
    from oneflow_compat._global.tensor import BOOL

    return BOOL


# OneFlow 0.9's table (tensortype.cpp): BFloat16Tensor is listed there but this implementation has no bfloat16
_TABLE = (("FloatTensor", dtypes.float32), ("DoubleTensor", dtypes.float64), ("CharTensor", dtypes.int8),
          ("IntTensor", dtypes.int32), ("LongTensor", dtypes.int64), ("ByteTensor", dtypes.uint8),
          ("HalfTensor", dtypes.float16), ("BoolTensor", None))
CPU_TYPES = {}
CUDA_TYPES = {}
for _name, _dt in _TABLE:
    CPU_TYPES[_name] = TensorType(_name, _dt or _bool(), "cpu")
    CUDA_TYPES[_name] = TensorType(_name, _dt or _bool(), "cuda")
del _name, _dt


def type_of(dtype, device_type):
    """The tensor type of a dtype on a device type ("cpu" / "cuda"); ValueError where there is none."""
    table = CUDA_TYPES if device_type == "cuda" else CPU_TYPES
    for t in table.values():
        if t.dtype is dtype:
            return t
    raise ValueError("unsupported data type (oneflow.%s) or device (%s)" % (dtype.name, device_type))


def type_from_string(name):
    """The tensor type named `name` ('oneflow.FloatTensor', 'oneflow.cuda.IntTensor')."""
    for t in list(CPU_TYPES.values()) + list(CUDA_TYPES.values()):
        if t.name == name:
            return t
    raise ValueError("invalid type: %s" % name)


def set_default_tensor_type(tensor_type):
    """Sets the default floating dtype from a tensor type or its name (`"oneflow.DoubleTensor"`)."""
    if isinstance(tensor_type, str):
        tensor_type = type_from_string(tensor_type)
    if not isinstance(tensor_type, TensorType):
        raise TypeError("invalid type object")
    if not tensor_type.dtype.is_floating:
        raise RuntimeError(_DEFAULT_ERROR)
    _STATE["dtype"] = tensor_type.dtype
