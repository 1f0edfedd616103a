"""`oneflow._oneflow_internal`: in OneFlow 0.9 the C++ extension module, where `flow.Tensor`, `flow.Size`,
`flow.device`, `flow.placement`, `flow.dtype` and the dtype objects are defined (python/oneflow/__init__.py and
framework/tensor.py @ v0.9.0: `Tensor = flow._oneflow_internal.Tensor`). Libraries written for OneFlow reach these
classes through it — flowvision 0.2's `transforms.functional.resize` tests
`isinstance(img, (flow.Tensor, flow._oneflow_internal.Tensor))`, so every `transforms.Resize` of an image goes
through here. The names are the very objects `oneflow` exports (an isinstance test gives the same answer either way);
the extension's other contents (runtime hooks, session and job-build internals) have no counterpart here."""
from oneflow_compat._global.placement import placement  # noqa: F401
from oneflow_compat._global.size import Size  # noqa: F401
from oneflow_compat._global.tensor import Tensor, device  # noqa: F401
from oneflow_compat.ir.dtypes import DType as dtype  # noqa: F401
from oneflow_compat.ir.dtypes import (bfloat16, bool_ as bool, float16, float32, float64, int8, int32,  # noqa: F401,A004
                                      int64, uint8, record, tensor_buffer)

float = float32  # noqa: A001 - OneFlow's names
double = float64
