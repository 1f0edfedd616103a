"""OneFlow 0.9's tensor types (`flow.FloatTensor`, `flow.BoolTensor`, ... and their `oneflow.cuda.*` twins, the
names `Tensor.type()` answers with) and `flow.set_default_tensor_type`.

Facts from OneFlow v0.9.0 `oneflow/api/python/framework/tensortype.cpp` (the types and their names, "invalid type:
NAME" for an unknown name; calling one builds a tensor as `flow.Tensor(...)` does, then converts it to the type's
dtype and device), `oneflow/api/python/framework/dtype.cpp` (set_default_tensor_type takes a tensor type, else
TypeError "invalid type object"; a non-floating one is refused as set_default_dtype refuses it) and
`python/oneflow/framework/dtype.py` (a name string is accepted).
"""
import numpy as np

from oneflow_compat.ir import dtypes
from oneflow_compat._global import creation, default_dtype
from oneflow_compat._global.size import Size
from oneflow_compat._global.tensor import BOOL


class TensorType(type):
    """The metaclass of the tensor types (`flow.FloatTensor`, `flow.cuda.LongTensor`, ...), as OneFlow 0.9's
    `oneflow.tensortype`: each type is a Python class, so `isinstance(t, flow.LongTensor)` is legal (and False: a
    tensor's class is `flow.Tensor`, as there); calling one builds a tensor as `flow.Tensor(*args)` does (data, or a
    shape of uninitialised values), of its dtype and device."""

    def __new__(mcs, type_name, dtype, device_type):
        is_cuda = device_type == "cuda"
        attrs = {"dtype": dtype, "device_type": device_type, "is_cuda": is_cuda,
                 "name": ("oneflow.cuda." if is_cuda else "oneflow.") + type_name,
                 "__module__": "oneflow.cuda" if is_cuda else "oneflow",
                 "__doc__": ("Creates a Tensor with the dtype of oneflow.%s and the device on %s, it has the same "
                             "parameters as :func:`oneflow.Tensor`" % (dtype.name, device_type))}
        return super().__new__(mcs, type_name, (), attrs)

    def __init__(cls, type_name, dtype, device_type):
        super().__init__(type_name, (), {})

    def __repr__(cls):
        return "<class '%s'>" % cls.name

    def __call__(cls, *args, **kwargs):
        if "dtype" in kwargs:
            raise TypeError("%s(): the dtype is the type's own (%s); dtype= is not accepted"
                            % (cls.name, cls.dtype))
        device = kwargs.pop("device", None) or (cls.device_type if cls.is_cuda else None)
        if len(args) == 1 and not isinstance(args[0], (int, np.integer, Size)):
            return creation.tensor(args[0], dtype=cls.dtype, device=device, **kwargs)
        shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
        return creation.zeros(*shape, dtype=cls.dtype, device=device, **kwargs)


# OneFlow 0.9's table (tensortype.cpp): BFloat16Tensor is listed there but this implementation has no bfloat16
_TABLE = (("FloatTensor", dtypes.float32), ("DoubleTensor", dtypes.float64), ("CharTensor", dtypes.int8),
          ("IntTensor", dtypes.int32), ("LongTensor", dtypes.int64), ("ByteTensor", dtypes.uint8),
          ("HalfTensor", dtypes.float16), ("BoolTensor", None))
CPU_TYPES = {}
CUDA_TYPES = {}
for _name, _dt in _TABLE:
    CPU_TYPES[_name] = TensorType(_name, _dt or BOOL, "cpu")
    CUDA_TYPES[_name] = TensorType(_name, _dt or BOOL, "cuda")
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


def as_tensor_type(obj):
    """`obj` as one of the types here: a TensorType, or any class or object with a oneflow `dtype` and an `is_cuda`
    flag (the `flow.cuda.*Tensor` classes); None for anything else."""
    if isinstance(obj, TensorType):
        return obj
    dtype, is_cuda = getattr(obj, "dtype", None), getattr(obj, "is_cuda", None)
    if isinstance(dtype, dtypes.DType) and isinstance(is_cuda, bool):
        return type_of(dtype, "cuda" if is_cuda else "cpu")
    return None


def set_default_tensor_type(tensor_type):
    """Sets the default floating dtype from a tensor type or its name (`"oneflow.DoubleTensor"`)."""
    if isinstance(tensor_type, str):
        tensor_type = type_from_string(tensor_type)
    tensor_type = as_tensor_type(tensor_type)
    if tensor_type is None:
        raise TypeError("invalid type object")
    default_dtype.set_floating(tensor_type.dtype)
