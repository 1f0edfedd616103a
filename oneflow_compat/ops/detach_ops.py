"""`stop_gradient`: its input's value, through which no gradient flows: what `Tensor.detach()` adds inside an
nn.Graph build (a lazy tensor's detach must cut the job's autodiff there, as eager detach cuts the record: the
straight-through estimator `hard - soft.detach() + soft` of gumbel_softmax relies on it)."""
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import array as array_k
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.registry import OpDef, register


def _same_meta(op):
    x = op.inputs[0]
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


register(OpDef("stop_gradient", infer=_same_meta, kernel=array_k.identity, sbp=sbp_rules.unary_linear, rowwise=True))
