"""The protobuf messages of a checkpoint variable's `meta` file (OneFlow's VariableMetaInfo), made by `protobuf`.

Schema (OneFlow's `oneflow/core/framework/variable_meta_info.proto`, `core/common/shape.proto` and
`core/common/data_type.proto`; proto2, package `oneflow`; the DataType values as of v0.9.0, a superset of
v0.3.4's)::

    enum DataType { kInvalidDataType = 0; kChar = 1; kFloat = 2; kDouble = 3; kInt8 = 4; kInt32 = 5; kInt64 = 6;
                    kUInt8 = 7; kOFRecord = 8; kFloat16 = 9; kTensorBuffer = 10; kBFloat16 = 11; kBool = 12;
                    kUInt16 = 13; kUInt32 = 14; kUInt64 = 15; kUInt128 = 16; kInt16 = 17; kInt128 = 18;
                    kComplex32 = 19; kComplex64 = 20; kComplex128 = 21; }
    message ShapeProto { repeated int64 dim = 1; }
    message VariableMetaInfo { required ShapeProto shape = 2; required DataType data_type = 3; }

A `meta` file is a VariableMetaInfo in protobuf's text format, written and read with `google.protobuf.text_format`
as OneFlow's `check_point_v2.py` did. As in `core/record/record_pb2.py`, the descriptor is built from the schema in a
private pool (no generated file, no clash with a real OneFlow in the same process).
"""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["ShapeProto", "VariableMetaInfo", "DATA_TYPES", "DESCRIPTOR"]

_PACKAGE = "oneflow"
DATA_TYPES = ("kInvalidDataType", "kChar", "kFloat", "kDouble", "kInt8", "kInt32", "kInt64", "kUInt8", "kOFRecord",
              "kFloat16", "kTensorBuffer", "kBFloat16", "kBool", "kUInt16", "kUInt32", "kUInt64", "kUInt128",
              "kInt16", "kInt128", "kComplex32", "kComplex64", "kComplex128")  # value = index


def _file_descriptor_proto():
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="oneflow/core/framework/variable_meta_info.proto",
                                             package=_PACKAGE, syntax="proto2")
    enum = fdp.enum_type.add(name="DataType")
    for number, name in enumerate(DATA_TYPES):
        enum.value.add(name=name, number=number)
    fdp.message_type.add(name="ShapeProto").field.add(name="dim", number=1, label=F.LABEL_REPEATED,
                                                      type=F.TYPE_INT64)
    meta = fdp.message_type.add(name="VariableMetaInfo")
    meta.field.add(name="shape", number=2, label=F.LABEL_REQUIRED, type=F.TYPE_MESSAGE,
                   type_name=".%s.ShapeProto" % _PACKAGE)
    meta.field.add(name="data_type", number=3, label=F.LABEL_REQUIRED, type=F.TYPE_ENUM,
                   type_name=".%s.DataType" % _PACKAGE)
    return fdp


_POOL = descriptor_pool.DescriptorPool()
DESCRIPTOR = _POOL.Add(_file_descriptor_proto()) or _POOL.FindFileByName(
    "oneflow/core/framework/variable_meta_info.proto")


def _message_class(name):
    descriptor = _POOL.FindMessageTypeByName("%s.%s" % (_PACKAGE, name))
    get_class = getattr(message_factory, "GetMessageClass", None)  # protobuf >= 4.22
    if get_class is None:
        return message_factory.MessageFactory(_POOL).GetPrototype(descriptor)
    return get_class(descriptor)


ShapeProto = _message_class("ShapeProto")
VariableMetaInfo = _message_class("VariableMetaInfo")
