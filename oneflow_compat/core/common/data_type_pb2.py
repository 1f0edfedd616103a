"""`oneflow.core.common.data_type_pb2`: the `DataType` enum of OneFlow v0.4.0's
`oneflow/core/common/data_type.proto` (package `oneflow`), names and numbers as there. The same numbers are the
`enum_value` of the `flow.float32`, `flow.int32`, ... objects (ir/dtypes.py).

The file's one message, `OptInt64`, carries no enum a script reads and is not provided."""
from oneflow_compat.core.proto_enum import EnumType, export

DataType = export(globals(), EnumType("DataType", [
    ("kInvalidDataType", 0),
    ("kChar", 1),
    ("kFloat", 2),
    ("kDouble", 3),
    ("kInt8", 4),
    ("kInt32", 5),
    ("kInt64", 6),
    ("kUInt8", 7),
    ("kOFRecord", 8),
    ("kFloat16", 9),
    ("kTensorBuffer", 10),
]))
