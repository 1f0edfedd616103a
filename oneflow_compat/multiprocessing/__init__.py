"""`oneflow.multiprocessing` (OneFlow 0.9, `python/oneflow/multiprocessing/__init__.py`): Python's `multiprocessing`
with OneFlow's pickler reductions registered, so that a local tensor or Parameter sent to another process (a
`Queue`, a `Pool`, the arguments of a spawned `Process`) arrives backed by shared memory (`reductions.py`,
`_global/shared_storage.py`); the sharing strategies; `spawn` / `start_processes` (`spawn.py`).
Everything of Python's module is here under the same name (`from multiprocessing import *`)."""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from oneflow_compat.multiprocessing import shared_memory  # noqa: F401
from oneflow_compat.multiprocessing._prctl import set_pdeathsig as _prctl_pr_set_pdeathsig  # noqa: F401
from oneflow_compat.multiprocessing.reductions import init_reductions
from oneflow_compat.multiprocessing.sharing import (get_all_sharing_strategies, get_sharing_strategy,  # noqa: F401
                                                    set_sharing_strategy, unlink_all_shared_memory)
from oneflow_compat.multiprocessing.spawn import (ProcessContext, ProcessExitedException,  # noqa: F401
                                                  ProcessRaisedException, SpawnContext, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "unlink_all_shared_memory"]
__all__ += multiprocessing.__all__

init_reductions()
