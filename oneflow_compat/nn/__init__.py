"""`flow.nn`: the legacy functions on job-function blobs (lowercase: `flow.nn.conv2d`, …, in `legacy_ops.py`) and,
beside them, the global-tensor API's classes (CamelCase: `Module`, `Linear`, `Graph`, …, in `global_api.py`),
`nn.functional` and `nn.init`. No name is shared between the two. `oneflow.nn` is a package, as in OneFlow, so
`import oneflow.nn.functional as F` and `oneflow.nn.init` resolve."""
import sys as _sys

from oneflow_compat.nn.legacy_ops import *  # noqa: F401,F403
from oneflow_compat.nn.legacy_ops import _pair, pads_for  # noqa: F401 (used by flow.layers)
from oneflow_compat.nn import functional, init  # noqa: F401
from oneflow_compat.nn.global_api import *  # noqa: F401,F403
from oneflow_compat.nn.global_api import graph

_sys.modules.setdefault(__name__ + ".graph", graph)  # `import oneflow.nn.graph` (it lives in _global)

# the oneflow.nn package's own submodules (OneFlow 0.9): nn.modules (layers by module path), nn.parallel (DDP),
# nn.utils (gradient clipping, weight norm, parameters as a vector)
from oneflow_compat.nn import modules, parallel, utils  # noqa: F401,E402
