"""Legacy dtype objects (`flow.float32`, …): numpy dtype, checkpoint `DataType` enum name, and the aliases."""
import numpy as np


_INSTANCES = {}


class DType:
    __slots__ = ("name", "np", "enum_name", "enum_value")

    def __init__(self, name, np_dtype, enum_name, enum_value):
        self.name = name
        self.np = np.dtype(np_dtype) if np_dtype is not None else None
        self.enum_name = enum_name
        self.enum_value = enum_value
        _INSTANCES.setdefault(name, self)  # every dtype, those made above this layer too (bool), for unpickling

    def __repr__(self):
        return "oneflow.%s" % self.name  # as OneFlow 0.5+ prints dtypes

    def __reduce__(self):
        return (_by_name, (self.name,))

    @property
    def is_floating(self):
        return self.np is not None and self.np.kind == "f"

    # OneFlow 0.9's DType properties (api/python/framework/dtype.cpp; the values: core/framework/dtype.cpp
    # DTypeMeta4DataType and the data types' sizes)
    @property
    def is_floating_point(self):
        return self.name in _FLOATING

    @property
    def is_signed(self):
        return self.name in _FLOATING or self.name in _SIGNED_INTEGERS

    @property
    def is_complex(self):
        return self.name.startswith("complex")

    @property
    def bytes(self):
        if self.name in ("record", "tensor_buffer"):  # no fixed size: OneFlow's OF_UNIMPLEMENTED
            raise NotImplementedError("%r has no fixed byte size" % self)
        return 2 if self.name == "bfloat16" else self.np.itemsize


_FLOATING = ("float16", "float32", "float64", "bfloat16")
_SIGNED_INTEGERS = ("int8", "int16", "int32", "int64", "int128")


char = DType("char", np.int8, "kChar", 1)
float32 = DType("float32", np.float32, "kFloat", 2)
float64 = DType("float64", np.float64, "kDouble", 3)
int8 = DType("int8", np.int8, "kInt8", 4)
int32 = DType("int32", np.int32, "kInt32", 5)
int64 = DType("int64", np.int64, "kInt64", 6)
uint8 = DType("uint8", np.uint8, "kUInt8", 7)
record = DType("record", None, "kOFRecord", 8)
float16 = DType("float16", np.float16, "kFloat16", 9)
tensor_buffer = DType("tensor_buffer", object, "kTensorBuffer", 10)

float = float32  # noqa: A001 - the legacy names shadow builtins on purpose
double = float64
half = float16
int = int32  # noqa: A001
long = int64

ALL = (char, float32, float64, int8, int32, int64, uint8, record, float16, tensor_buffer)
_BY_NP = {}
for _d in (float32, float64, int8, int32, int64, uint8, float16):
    _BY_NP.setdefault(_d.np, _d)
_BY_ENUM_NAME = {d.enum_name: d for d in ALL}
_BY_ENUM_VALUE = {d.enum_value: d for d in ALL}


def from_numpy(np_dtype):
    """The legacy dtype of a numpy dtype (int8 maps to `int8`, not `char`)."""
    try:
        return _BY_NP[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError("numpy dtype %s has no oneflow counterpart" % np.dtype(np_dtype)) from None


def _by_name(name):
    for d in ALL:
        if d.name == name:
            return d
    if name in _INSTANCES:
        return _INSTANCES[name]
    raise ValueError("no dtype named %r" % (name,))


def from_enum_name(name):
    return _BY_ENUM_NAME[name]


def from_enum_value(value):
    return _BY_ENUM_VALUE[value]


def as_dtype(x):
    """Accepts a DType, a numpy dtype/type or None (None stays None)."""
    if x is None or isinstance(x, DType):
        return x
    return from_numpy(x)


def convert_oneflow_dtype_to_numpy_dtype(dtype):
    return as_dtype(dtype).np


# --- limits team: bfloat16 (OneFlow 0.9's flow.bfloat16, DataType kBFloat16 = 11 in core/common/data_type.proto) ---
# numpy has no bfloat16: its values are stored as float32 arrays holding bfloat16 numbers (the top 16 bits of a
# float32, the low 16 zero), every kernel output of this dtype rounded to them (runtime/plan.py, kernels/bfloat16.py)
# and every tensor made of it too. Not in ALL (checkpoint files and the float32 <-> numpy map keep their members).
bfloat16 = DType("bfloat16", np.float32, "kBFloat16", 11)

# checkpoint meta files name it: OneFlow 0.9's flow.save writes a bfloat16 tensor's `meta` with
# data_type kBFloat16 and its `out` as float32 bytes (check_point_v2.py _save_tensor_to_disk writes
# tensor.numpy().tobytes(), and framework/tensor.py _numpy converts bfloat16 to float32 first, v0.9.0), which is
# this dtype's storage: read by its enum name / value, 4 bytes an element. from_numpy still never gives it.
_BY_ENUM_NAME[bfloat16.enum_name] = bfloat16
_BY_ENUM_VALUE[bfloat16.enum_value] = bfloat16

def any_from_numpy(np_dtype):
    """The dtype of a numpy dtype among every dtype made, the global API's (bool, …) included: what a boxing's
    metadata needs for a value of any dtype (`from_numpy` stays the legacy API's mapping)."""
    np_dtype = np.dtype(np_dtype)
    found = _BY_NP.get(np_dtype)
    if found is not None:
        return found
    for d in _INSTANCES.values():
        if d.np == np_dtype:
            return d
    raise TypeError("numpy dtype %s has no oneflow counterpart" % np_dtype)
