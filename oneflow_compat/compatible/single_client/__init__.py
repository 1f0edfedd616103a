"""`oneflow.compatible.single_client`: the legacy job-function API alone, as OneFlow 0.5 named it.

`import oneflow.compatible.single_client as flow`, `from oneflow.compatible import single_client as flow`,
`import oneflow.compatible.single_client.typing as tp` and `from oneflow.compatible.single_client import typing as
tp` (and the same under `oneflow_compat.`) give the legacy API's own objects: `single_client.typing` IS
`oneflow.typing`, `single_client.global_function` IS `oneflow.global_function`, so the default session and every
other module-level state is the one the `oneflow` names use. Names both APIs share (`matmul`, `reshape`, `zeros`,
…) are the legacy functions here; the global-tensor names (`randn`, `Tensor`, `placement`, …) are absent.

Importing it chooses the legacy API for the process (framework/client_mode.py), as OneFlow 0.5's import switched
the process to the single client: global tensors in the same process are then an error.
"""
from oneflow_compat.compatible.single_client._legacy_names import *  # noqa: F401,F403 (chooses the mode first)
from oneflow_compat.compatible.single_client import _submodule_aliases

_submodule_aliases.install(__name__)
