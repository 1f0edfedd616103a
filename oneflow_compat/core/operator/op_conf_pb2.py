"""`oneflow.core.operator.op_conf_pb2`: the enum of OneFlow v0.4.0's `oneflow/core/operator/op_conf.proto`
(package `oneflow`), `ActivationType`, names and numbers as there. OneFlow-Benchmark's BERT passes
`op_conf_util.kNone` as the activation of its dense layers.

The file's messages (`OperatorConf` and the per-op confs) describe OneFlow's own graph; jobs here are built by the
Python API, so no script has a use for them and they are not provided."""
from oneflow_compat.core.proto_enum import EnumType, export

ActivationType = export(globals(), EnumType("ActivationType", [
    ("kNone", 0),
    ("kTanH", 1),
    ("kSigmoid", 2),
    ("kRelu", 3),
]))
