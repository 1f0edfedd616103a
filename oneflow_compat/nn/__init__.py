"""`flow.nn`: the legacy functions on job-function blobs (lowercase: `flow.nn.conv2d`, …, in `legacy_ops.py`) and,
beside them, the global-tensor API's classes (CamelCase: `Module`, `Linear`, `Graph`, …, in `global_api.py`),
`nn.functional` and `nn.init`. No name is shared between the two. `oneflow.nn` is a package, as in OneFlow, so
`import oneflow.nn.functional as F` and `oneflow.nn.init` resolve."""
import sys as _sys

from oneflow_compat.nn.legacy_ops import *  # noqa: F401,F403
from oneflow_compat.nn.legacy_ops import _pair, pads_for  # noqa: F401 (used by flow.layers)
from oneflow_compat.nn import functional, init  # noqa: F401
# flow.nn names of OneFlow v0.3.4's math family (the whole legacy API, issue 20)
from oneflow_compat.nn.math_names import *  # noqa: F401,F403
from oneflow_compat.nn.global_api import *  # noqa: F401,F403
from oneflow_compat.nn.global_api import graph

_sys.modules.setdefault(__name__ + ".graph", graph)  # `import oneflow.nn.graph` (it lives in _global)

# nn ops family: the legacy functions of each family (lowercase), and `flow.layers`' prelu lives in layers.py
from oneflow_compat.nn.legacy_activations import (  # noqa: F401,E402
    elu, hardsigmoid, hardswish, hardtanh, logsoftmax, mish, relu6, swish)
from oneflow_compat.nn import legacy_losses as _legacy_losses  # noqa: E402
from oneflow_compat.nn.legacy_losses import (  # noqa: F401,E402
    distributed_sparse_softmax_cross_entropy_with_logits, sparse_cross_entropy)
from oneflow_compat.nn.shared_names import shared as _shared  # noqa: E402

# names both APIs export: the legacy function of blobs and OneFlow 0.9's module class (nn/shared_names.py)
L1Loss = _shared(L1Loss, _legacy_losses.l1_loss)  # noqa: F405
BCELoss = _shared(BCELoss, _legacy_losses.bce_loss)  # noqa: F405
BCEWithLogitsLoss = _shared(BCEWithLogitsLoss, _legacy_losses.bce_with_logits_loss)  # noqa: F405
MSELoss = _shared(MSELoss, _legacy_losses.mse_loss)  # noqa: F405
MarginRankingLoss = _shared(MarginRankingLoss, _legacy_losses.margin_ranking_loss)  # noqa: F405
TripletMarginLoss = _shared(TripletMarginLoss, _legacy_losses.triplet_margin_loss)  # noqa: F405
KLDivLoss = _shared(KLDivLoss, _legacy_losses.kldivloss)  # noqa: F405
from oneflow_compat.nn.legacy_norms import (  # noqa: F401,E402
    batch_normalization, layer_norm)  # (moments: flow.math's, via nn/math_names.py)
from oneflow_compat.nn import legacy_norms as _legacy_norms  # noqa: E402
GroupNorm = _shared(GroupNorm, _legacy_norms.group_normalization)  # noqa: F405
InstanceNorm1d = _shared(InstanceNorm1d, _legacy_norms.instance_normalization1d)  # noqa: F405
InstanceNorm2d = _shared(InstanceNorm2d, _legacy_norms.instance_normalization2d)  # noqa: F405
InstanceNorm3d = _shared(InstanceNorm3d, _legacy_norms.instance_normalization3d)  # noqa: F405
from oneflow_compat.nn.legacy_convs import (  # noqa: F401,E402
    conv1d, conv2d_transpose, conv3d, torch_conv2d_transpose)
from oneflow_compat.nn.legacy_convs import avg_pool1d, avg_pool3d, max_pool1d, max_pool3d  # noqa: F401,E402
from oneflow_compat.nn import legacy_misc as _legacy_misc  # noqa: E402
from oneflow_compat.nn.legacy_misc import random_mask_like  # noqa: F401,E402

PixelShuffle = _shared(PixelShufflev2, _legacy_misc.pixel_shuffle)  # noqa: F405 (OneFlow 0.9: PixelShufflev2)
PixelShufflev2 = _shared(PixelShufflev2, _legacy_misc.pixel_shufflev2)  # noqa: F405
from oneflow_compat.nn.legacy_activations import (  # noqa: F401,E402
    fused_bias_add_dropout, fused_bias_add_gelu)  # (fused_self_attention_...: nn/math_names.py)
# the oneflow.nn package's own submodules (OneFlow 0.9): nn.modules (layers by module path), nn.parallel (DDP),
# nn.utils (gradient clipping, weight norm, parameters as a vector)
from oneflow_compat.nn import modules, parallel, utils  # noqa: F401,E402
# api-data: oneflow.nn.image (OneFlow 0.9's image modules on tensor buffers; the data-pipeline and quantization
# modules come with global_api's names)
from oneflow_compat.nn import image  # noqa: F401,E402
from oneflow_compat.nn import qat  # noqa: F401,E402  (api-data: oneflow.nn.qat.conv)
# modtests team: `oneflow.nn.graph.util` (OneFlow 0.9's ArgsTree / NamedArg: `nn/graph_util.py`)
from oneflow_compat.nn import graph_util as _graph_args_tree  # noqa: E402

graph.util = _graph_args_tree
if not hasattr(graph, "__path__"):
    graph.__path__ = []  # (a package to the import system: its submodule `util` is found in sys.modules)
_sys.modules.setdefault(__name__ + ".graph.util", _graph_args_tree)
