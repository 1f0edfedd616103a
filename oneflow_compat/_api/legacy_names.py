"""The legacy API's top-level names (OneFlow v0.3/v0.4 `oneflow.*`), in one list: the package top binds them (and then
lets the global-tensor API take the names both APIs share), and `oneflow.compatible.single_client` binds exactly
them. Importing this module chooses no API."""
from oneflow_compat import (  # noqa: F401
    checkpoint, config, data, distribute, env, experimental, image, initializer, layers, losses, math, nn, optimizer,
    random, regularizers, scope, train, typing, unittest)
from oneflow_compat.ir.dtypes import (  # noqa: F401
    char, double, float, float16, float32, float64, half, int, int8, int32, int64, long, record, tensor_buffer,
    uint8, convert_oneflow_dtype_to_numpy_dtype)
from oneflow_compat.framework.function_config import FunctionConfig  # noqa: F401
from oneflow_compat.framework.job_function import global_function  # noqa: F401
from oneflow_compat.framework.session import (  # noqa: F401
    clear_default_session, eager_execution_enabled, enable_eager_execution, sync_default_session)
from oneflow_compat._api.array_api import (  # noqa: F401
    broadcast_like, clamp, clip, clip_by_scalar, clip_by_value, concat, expand_dims, flatten, gather, masked_fill,
    one_hot, pad, reverse, slice, slice_v2, squeeze, stack, transpose, where)
from oneflow_compat.checkpoint import get_all_variables, load_variables  # noqa: F401
from oneflow_compat._api.data_api import (  # noqa: F401
    decode as image_decode, random_crop as image_random_crop, Resize as image_resize, target_resize as
    image_target_resize)
from oneflow_compat.initializer import (  # noqa: F401
    constant_initializer, empty_initializer, glorot_normal_initializer, glorot_uniform_initializer,
    kaiming_initializer, ones_initializer, random_normal_initializer, random_uniform_initializer, truncated_normal,
    truncated_normal_initializer, variance_scaling_initializer, xavier_normal_initializer,
    xavier_uniform_initializer, zeros_initializer)
from oneflow_compat._api.ops_api import (  # noqa: F401
    cast, cast_to_current_logical_view, constant, constant_like, constant_scalar, get_variable, identity, matmul,
    ones, ones_like, parallel_cast, reshape, reshape_like, watch, watch_diff, zeros, zeros_like)
from oneflow_compat.typing import FixedTensorDef, MirroredTensorDef  # noqa: F401
from oneflow_compat.custom_ops import (  # noqa: F401
    consistent_user_op_builder, consistent_user_op_module_builder, user_op_builder, user_op_module_builder)
from oneflow_compat._api.job_desc import current_global_function_desc, current_scope  # noqa: F401
# nn ops family: the top-level losses of OneFlow v0.3.4/v0.4.0 (ops/loss_ops.py, ops/combined_margin_loss.py)
from oneflow_compat.nn.legacy_losses import combined_margin_loss, smooth_l1_loss  # noqa: F401,E402
# and its padding functions (ops/pad.py)
from oneflow_compat.nn.legacy_misc import (  # noqa: F401,E402
    constant_pad2d, reflection_pad2d, replication_pad2d, same_padding, zero_pad2d)

function_config = FunctionConfig
ExecutionConfig = FunctionConfig
name_scope = scope.namespace
fixed_placement = scope.placement
device_prior_placement = scope.placement

__all__ = sorted(n for n in list(globals()) if not n.startswith("_"))
