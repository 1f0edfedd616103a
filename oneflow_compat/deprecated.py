"""`flow.deprecated`: OneFlow v0.3.4's deprecated names — `variable_scope` (the deprecated name scope) and the
ssh-started worker processes (`init_worker`, `delete_worker`), refused: the ranks are started by mpiexec or the
launcher here (`_api/refusals.py`)."""
from oneflow_compat._api.legacy_misc import name_scope as variable_scope  # noqa: F401
from oneflow_compat._api.refusals import WORKERS, refused

init_worker = refused("deprecated.init_worker", WORKERS)
delete_worker = refused("deprecated.delete_worker", WORKERS)
delete_worker_by_bootstrap = refused("deprecated.delete_worker_by_bootstrap", WORKERS)
delete_worker_of_multi_process = refused("deprecated.delete_worker_of_multi_process", WORKERS)


class nn:  # noqa: N801 - OneFlow's namespace `flow.deprecated.nn`
    """`flow.deprecated.nn` of OneFlow v0.4.0: the named-module base class."""

    from oneflow_compat._api.legacy_misc import Module
