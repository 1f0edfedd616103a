"""OneFlow's OFRecord protobuf messages (`import oneflow.core.record.record_pb2 as ofrecord`), made by `protobuf`.

Schema (`oneflow/core/record/record.proto` at v0.3.4, proto2, package `oneflow`)::

    message BytesList  { repeated bytes  value = 1; }
    message FloatList  { repeated float  value = 1 [packed = true]; }
    message DoubleList { repeated double value = 1 [packed = true]; }
    message Int32List  { repeated int32  value = 1 [packed = true]; }
    message Int64List  { repeated int64  value = 1 [packed = true]; }
    message Feature { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2; DoubleList double_list = 3;
                                   Int32List int32_list = 4; Int64List int64_list = 5; } }
    message OFRecord { map<string, Feature> feature = 1; }

OneFlow generated this module with `protoc`; here the same file descriptor is built from the schema above with
`descriptor_pb2` and the classes come from protobuf's message factory, so they are protobuf's own messages (its
encoder, decoder, text format and checks) without a generated file or a `protoc` at build time. The descriptor lives
in a private pool: a real OneFlow imported in the same process keeps its own `oneflow/core/record/record.proto`.
"""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, EncodeError  # noqa: F401 (protobuf's errors, re-exported)

__all__ = ["BytesList", "FloatList", "DoubleList", "Int32List", "Int64List", "Feature", "OFRecord",
           "DecodeError", "EncodeError", "DESCRIPTOR"]

_PACKAGE = "oneflow"
_LISTS = (("BytesList", "TYPE_BYTES", False), ("FloatList", "TYPE_FLOAT", True), ("DoubleList", "TYPE_DOUBLE", True),
          ("Int32List", "TYPE_INT32", True), ("Int64List", "TYPE_INT64", True))
_KINDS = ("bytes_list", "float_list", "double_list", "int32_list", "int64_list")  # Feature's oneof, field 1..5


def _file_descriptor_proto():
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="oneflow/core/record/record.proto", package=_PACKAGE,
                                             syntax="proto2")
    for name, scalar, packed in _LISTS:
        field = fdp.message_type.add(name=name).field.add(name="value", number=1, label=F.LABEL_REPEATED,
                                                           type=getattr(F, scalar))
        if packed:
            field.options.packed = True
    feature = fdp.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, (kind, (type_name, _, _)) in enumerate(zip(_KINDS, _LISTS), start=1):
        feature.field.add(name=kind, number=number, label=F.LABEL_OPTIONAL, type=F.TYPE_MESSAGE,
                          type_name=".%s.%s" % (_PACKAGE, type_name), oneof_index=0)
    record = fdp.message_type.add(name="OFRecord")
    entry = record.nested_type.add(name="FeatureEntry")  # what protoc makes of map<string, Feature> feature = 1
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING)
    entry.field.add(name="value", number=2, label=F.LABEL_OPTIONAL, type=F.TYPE_MESSAGE,
                    type_name=".%s.Feature" % _PACKAGE)
    record.field.add(name="feature", number=1, label=F.LABEL_REPEATED, type=F.TYPE_MESSAGE,
                     type_name=".%s.OFRecord.FeatureEntry" % _PACKAGE)
    return fdp


_POOL = descriptor_pool.DescriptorPool()
DESCRIPTOR = _POOL.Add(_file_descriptor_proto()) or _POOL.FindFileByName("oneflow/core/record/record.proto")


def _message_class(name):
    descriptor = _POOL.FindMessageTypeByName("%s.%s" % (_PACKAGE, name))
    get_class = getattr(message_factory, "GetMessageClass", None)  # protobuf >= 4.22
    if get_class is None:
        return message_factory.MessageFactory(_POOL).GetPrototype(descriptor)
    return get_class(descriptor)


BytesList = _message_class("BytesList")
FloatList = _message_class("FloatList")
DoubleList = _message_class("DoubleList")
Int32List = _message_class("Int32List")
Int64List = _message_class("Int64List")
Feature = _message_class("Feature")
OFRecord = _message_class("OFRecord")
