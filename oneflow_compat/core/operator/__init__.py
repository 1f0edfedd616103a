"""`oneflow.core.operator`: OneFlow's operator protobuf module (its enums, pure Python)."""
