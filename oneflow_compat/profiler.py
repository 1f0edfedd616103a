"""`flow.profiler` of OneFlow v0.4.0: NVTX range marks for NVIDIA's profilers. oneflow_compat has no NVTX
instrumentation, so the marks record nothing: `nvtx_start` / `nvtx_end` pass their blob through (an identity op
named as OneFlow names it), `range_push` / `range_pop` do nothing."""
from oneflow_compat.ir import builder
from oneflow_compat.ops.registry import apply


def nvtx_start(x, mark_prefix, name=None):
    if name is None:
        name = builder.current("flow.profiler.nvtx_start").job.unique_name("NvtxStart_")
    return apply("identity", [x], name=name)


def nvtx_end(x, mark_prefix, name=None):
    if name is None:
        name = builder.current("flow.profiler.nvtx_end").job.unique_name("NvtxEnd_")
    return apply("identity", [x], name=name)


def range_push(range_name):
    """No effect (no NVTX ranges here)."""


def range_pop():
    """No effect (no NVTX ranges here)."""
