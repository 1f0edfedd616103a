"""`oneflow.core.common`: OneFlow's common protobuf modules (enums only, pure Python)."""
