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
from oneflow_compat.typing import FixedTensorDef, MirroredTensorDef, MirroredTensorListDef  # noqa: F401
from oneflow_compat.custom_ops import (  # noqa: F401
    consistent_user_op_builder, consistent_user_op_module_builder, user_op_builder, user_op_module_builder)
from oneflow_compat._api.job_desc import current_global_function_desc, current_scope  # noqa: F401
# nn ops family: the top-level losses of OneFlow v0.3.4/v0.4.0 (ops/loss_ops.py, ops/combined_margin_loss.py)
from oneflow_compat.nn.legacy_losses import combined_margin_loss, smooth_l1_loss  # noqa: F401,E402
# and its padding functions (ops/pad.py)
from oneflow_compat.nn.legacy_misc import (  # noqa: F401,E402
    constant_pad2d, reflection_pad2d, replication_pad2d, same_padding, zero_pad2d)

# --- the rest of OneFlow v0.3.4/v0.4.0's top-level names (the whole legacy API, issue 20) --------------------------
from oneflow_compat._api.legacy_array_api import (  # noqa: F401,E402
    amp_white_identity, argsort, argwhere, assign, cast_to_static_shape, count_not_finite, diag, dim_gather,
    dynamic_reshape, eager_nccl_all_reduce, elem_cnt, expand, gather_nd, identity_n, multi_count_not_finite, nonzero,
    builtin_op, hierarchical_parallel_cast, pad_grad, range, scatter_nd, slice_update, sort, sync_dynamic_resize, tensor_scatter_nd_add, tensor_scatter_nd_update)
from oneflow_compat import (  # noqa: F401,E402
    advanced, deprecated, detection, distributed, linalg, model, onnx, profiler, quantization, saved_model,
    serving, summary, system, sysconfig, tensorrt, util)
from oneflow_compat.model import Model  # noqa: F401,E402
from oneflow_compat._api.time_shape_api import acc, pack, repeat, unpack  # noqa: F401,E402
from oneflow_compat._api.experimental_api import (  # noqa: F401,E402
    categorical_ordinal_encode, distributed_partial_fc_sample)
from oneflow_compat._api.tensor_buffer_api import (  # noqa: F401,E402
    gen_tensor_buffer, image_batch_align, image_flip, image_normalize, object_bbox_flip, object_bbox_scale,
    object_segmentation_polygon_flip, object_segmentation_polygon_scale, object_segmentation_polygon_to_mask,
    tensor_buffer_to_tensor, tensor_buffer_to_tensor_list, tensor_list_split, tensor_list_to_tensor_buffer,
    tensor_to_tensor_buffer)
from oneflow_compat._api.legacy_misc import InitEagerGlobalSession  # noqa: F401,E402
from oneflow_compat._api.legacy_misc import (  # noqa: F401,E402
    current_machine_id, current_resource, dtypes, find_or_create_module, inter_job_reuse_mem_strategy,
    is_deprecated)
from oneflow_compat._api.legacy_math import (  # noqa: F401,E402
    broadcast_to_compatible_with, in_top_k, unsorted_batch_segment_sum, unsorted_segment_sum,
    unsorted_segment_sum_like)
# v0.4.0's CTC loss (ctc helper; ops/ctc_ops.py)
from oneflow_compat.nn.legacy_ctc import ctc_loss  # noqa: F401,E402

function_config = FunctionConfig
ExecutionConfig = FunctionConfig
from oneflow_compat._api.legacy_misc import name_scope  # noqa: F401,E402 (OneFlow's deprecated spelling)
fixed_placement = scope.placement
device_prior_placement = scope.placement

__all__ = sorted(n for n in list(globals()) if not n.startswith("_"))
