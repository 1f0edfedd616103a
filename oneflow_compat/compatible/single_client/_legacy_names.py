"""The names of `oneflow.compatible.single_client`: the legacy API's own modules and functions (the same objects
the `oneflow` names hold, never a second copy). Loading this module chooses the legacy API for the process."""
from oneflow_compat.framework import client_mode as _client_mode

# First, so that a process already using global tensors fails here, before anything below is bound.
_client_mode.use(_client_mode.LEGACY, "import oneflow.compatible.single_client")

from oneflow_compat._api.legacy_names import *  # noqa: E402,F401,F403
from oneflow_compat import checkpoint as _checkpoint  # noqa: E402

save = _checkpoint.save  # the legacy checkpoint of job-function variables
load = _checkpoint.get

__all__ = sorted(n for n in list(globals()) if not n.startswith("_"))
