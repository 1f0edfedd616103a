"""oneflow_compat: OneFlow v0.3's legacy lazy "job function" API on numpy/CuPy, in one process or over MPI.

Scripts keep `import oneflow as flow`; see README.md for how the `oneflow` name is provided.
"""
from oneflow_compat.backend import kernels_location as _kernels_location

# Before anything imports a kernel: a checkout's package takes the checkout's kernels/ (a wheel carries its own).
_kernels_location.attach_checkout_kernels(__name__, __file__)

from oneflow_compat.comm import world as _world  # noqa: E402

# Under mpiexec: BLAS threads to this rank's share of the cores (effective if numpy is not loaded yet), and the
# one-program behaviour (output once, any failure ends every rank) from the first line the script prints.
_chosen = _world.limit_blas_threads()
if _chosen and "numpy" in __import__("sys").modules:  # too late for the variables: tell loaded BLAS directly
    _world.limit_loaded_blas_threads(int(next(iter(_chosen.values()))))
if _world.job_size() > 1:  # MPI, or the launch variables (several MPI worlds join here)
    _world.get_process_comm()
from oneflow_compat.ops import (activation_ops, array_ops, data_ops, math_ops, nn_ops,  # noqa: F401 (registers)
                                shape_ops, system_ops)

from oneflow_compat.ir.dtypes import (  # noqa: F401
    char, double, float, float16, float32, float64, half, int, int8, int32, int64, long, record, tensor_buffer,
    uint8, convert_oneflow_dtype_to_numpy_dtype)
from oneflow_compat.framework.function_config import FunctionConfig  # noqa: F401
from oneflow_compat.framework.job_function import global_function  # noqa: F401
from oneflow_compat.framework.session import (  # noqa: F401
    clear_default_session, eager_execution_enabled, enable_eager_execution, sync_default_session)

from oneflow_compat import (  # noqa: F401
    checkpoint, config, data, distribute, env, image, layers, losses, math, nn, optimizer, random, regularizers,
    scope, train, typing, unittest)
from oneflow_compat.tools import explain
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

from oneflow_compat.typing import FixedTensorDef, MirroredTensorDef  # noqa: F401,E402
from oneflow_compat import experimental  # noqa: F401,E402
from oneflow_compat.custom_ops import (  # noqa: F401,E402 (refused with an error naming the op)
    consistent_user_op_builder, consistent_user_op_module_builder, user_op_builder, user_op_module_builder)

# --- the global-tensor API of OneFlow 0.5-0.9 beside the legacy one; names both use dispatch on their arguments
from oneflow_compat import autograd, cuda, sbp  # noqa: F401,E402
from oneflow_compat._global.placement import placement  # noqa: F401,E402
from oneflow_compat._global.size import Size  # noqa: F401,E402
from oneflow_compat._global.tensor import BOOL as bool, Tensor, device  # noqa: F401,E402,A001
from oneflow_compat._global.creation import (  # noqa: F401,E402
    arange, as_tensor, empty, from_numpy, full, full_like, linspace, rand, randint, randn, randperm, tensor)
from oneflow_compat._global.generators import (  # noqa: F401,E402
    Generator, default_generator, initial_seed, manual_seed, seed)
from oneflow_compat._global.functional import (  # noqa: F401,E402
    abs, add, allclose, argmax, argmin, bmm, cat, ceil, clone, cos, div, dot, eq, equal, exp, expm1, floor, ge,
    greater, greater_equal, gt, is_tensor, le, less, less_equal, log, log1p, log_softmax, logical_not, lt,
    maximum, max, mean, min, minimum, mm, mul, ne, neg, negative, not_equal, numel, permute, pow, prod,
    reciprocal, relu, round, rsqrt, sigmoid, sign, sin, softmax, sqrt, square, std, sub, sum, t, tanh, unsqueeze,
    var, view)
from oneflow_compat._global.shared_names import (  # noqa: F401,E402
    cast, clamp, clip, concat, flatten, gather, masked_fill, matmul, one_hot, ones, ones_like, reshape, squeeze,
    stack, transpose, where, zeros, zeros_like)
from oneflow_compat.runtime.autograd import (  # noqa: F401,E402
    enable_grad, is_grad_enabled, no_grad, set_grad_enabled)
from oneflow_compat._api import blob_methods as _blob_methods

_blob_methods.install()

function_config = FunctionConfig
ExecutionConfig = FunctionConfig
name_scope = scope.namespace
fixed_placement = scope.placement
device_prior_placement = scope.placement
from oneflow_compat._global.serialization import load, save  # noqa: E402 (legacy checkpoint or state dicts)
from oneflow_compat import optim  # noqa: E402,F401

from oneflow_compat._api.job_desc import current_global_function_desc, current_scope  # noqa: E402,F401
# `import oneflow.compatible.single_client as flow`: the legacy API alone (importing it chooses the legacy API)
from oneflow_compat import compatible  # noqa: E402,F401
