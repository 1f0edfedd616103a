"""`oneflow.boxing` (OneFlow 0.9, python/oneflow/boxing/): the collective-boxing settings of the resource
configuration, `flow.boxing.enable_fusion(val)` and `flow.boxing.nccl.*`. In OneFlow they tune how nn.Graph
schedules its NCCL collectives (fusion of small collectives, streams, buffers); here boxing runs through the
project's own collectives, whose numbers and inserted transfers do not depend on them, so each call checks its
argument's type as OneFlow does (config_util.py `_set_resource_attr`: an AssertionError with its words) and the
value is recorded (`settings()`), without changing any result."""
from oneflow_compat.boxing import nccl
from oneflow_compat.boxing.settings import set_resource_attr as _set, settings  # noqa: F401


def enable_fusion(val=True):
    """Whether the operators' collectives may be fused (collective_boxing_conf.enable_fusion)."""
    _set(["collective_boxing_conf", "enable_fusion"], val, bool)


__all__ = ["enable_fusion", "nccl", "settings"]
