"""`flow.env.init_rdma`, `rdma_is_initialized`, `destory_rdma` (OneFlow 0.9 `python/oneflow/env.py`;
`flow.env.all_device_placement` is `env_placement.py` here, bound by the package's `__init__`: `flow.placement`
reads `flow.env`, so `flow.env` cannot import it).

This implementation has no RDMA data plane (its ranks talk over MPI, and NCCL between GPUs: issue 20 keeps
OneFlow's RDMA out of scope), so it behaves as OneFlow 0.9 built without RDMA
(`oneflow/core/job/env_global_objects_scope.cpp: InitRDMA`, v0.9.0): `init_rdma()` initialises nothing and is no
error — a job of one process skips it silently (OneFlow logs "Skip init RDMA because only one process in this
group!" at INFO), a job of several warns "Skip init RDMA because RDMA is not compiled!" — and `rdma_is_initialized()`
is always False.
"""
from oneflow_compat.backend import notices
from oneflow_compat.comm import world as _world

__all__ = ["init_rdma", "rdma_is_initialized", "destory_rdma"]

ONE_PROCESS = "Skip init RDMA because only one process in this group!"
NOT_COMPILED = "Skip init RDMA because RDMA is not compiled!"
_SAID = []


def init_rdma():
    """Init RDMA in the current environment where it is supported (here it never is: see the module docstring)."""
    if _world.job_size() > 1:
        if not _SAID:
            _SAID.append(True)
            notices.warn(NOT_COMPILED + " (oneflow_compat's ranks talk over MPI/NCCL; no RDMA data plane)")
    else:
        notices.detail(ONE_PROCESS)


def rdma_is_initialized():
    """Whether RDMA is initialized: always False here (no RDMA data plane)."""
    return False


def destory_rdma():
    """Destroys RDMA where it was initialized (OneFlow 0.9's spelling): nothing to destroy here."""
    return None
