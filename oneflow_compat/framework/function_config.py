"""`flow.function_config()`: per-job options (legacy-api.md §2.4)."""
import copy

import numpy as np

from oneflow_compat.ir import dtypes

# Performance/backend knobs of the C++ runtime: accepted (bool setters default to True) and ignored.
_IGNORED_FLAGS = {
    "allow_cpu_return_op", "enable_inplace", "enable_inplace_in_reduce_struct", "enable_reused_mem", "enable_cudnn",
    "cudnn_buf_limit_mbyte", "cudnn_conv_force_fwd_algo", "cudnn_conv_force_bwd_data_algo",
    "cudnn_conv_force_bwd_filter_algo", "cudnn_conv_heuristic_search_algo", "cudnn_conv_use_deterministic_algo_only",
    "enable_cudnn_fused_normalization_add_relu", "enable_fuse_add_to_output", "enable_fuse_cast_scale",
    "enable_fuse_model_update_ops", "enable_gradients_stats_aggregation",
    "enable_keep_header_only", "enable_nccl", "use_nccl_inter_node_communication", "use_boxing_v2",
    "do_parallel_cast_before_widening_type_cast", "enable_all_reduce_group", "all_reduce_group_num",
    "all_reduce_lazy_ratio", "all_reduce_group_min_mbyte", "all_reduce_group_size_warmup", "all_reduce_fp16",
    "enable_non_distributed_optimizer", "disable_all_reduce_sequence", "non_distributed_optimizer_group_size_mbyte",
    "enable_true_half_config_when_conv", "enable_float_compute_for_half_gemm", "concurrency_width", "use_xla_jit",
    "use_tensorrt", "prune_parallel_cast_ops", "prune_cast_to_static_shape_ops", "exp_run_conf", "static_mem_alloc_policy_white_list",
    "optimizer_placement_optimization_mode", "optimizer_placement_optimization_threshold",
    "indexed_slices_optimizer_conf", "enable_squeeze_add_to_output", "enable_fuse_add_to_output",
    "enable_qat", "qat", "tensorrt", "enable_auto_parallel", "cudnn_conv_enable_pseudo_half",
}


def _view_name(view):
    """The view name ("mirrored" or "consistent") of flow.scope.mirrored_view() / consistent_view(), instance or
    class: the surface's view objects carry it as `name`."""
    name = getattr(view, "name", None)
    if name not in ("mirrored", "consistent"):
        raise TypeError("expected flow.scope.mirrored_view() or flow.scope.consistent_view(), got %r" % (view,))
    return name


class _Namespace:
    def __init__(self, cfg, prefix):
        object.__setattr__(self, "_cfg", cfg)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name):
        return self._cfg._setter(self._prefix + "." + name)


class FunctionConfig:
    def __init__(self):
        self.job_type = None  # set by global_function or by train.* legacy setters
        self.default_data_type_ = dtypes.float32
        self.default_logical_view_ = "consistent"
        self.default_placement_scope_ = None
        self.default_initializer_conf_ = None
        self.primary_lr_ = None
        self.secondary_lr_ = None
        self.model_update_conf_ = None
        self.loss_scale_factor_ = None
        self.num_gradient_accumulation_steps_ = 1
        self.implicit_boxing_ = "silent"
        self.enable_auto_mixed_precision_ = False
        self.ignored = {}
        self.train = _TrainConf(self)

    # --- registered setters -----------------------------------------------------------------------------
    def default_data_type(self, value):
        self.default_data_type_ = dtypes.as_dtype(value)

    def default_logical_view(self, view):
        self.default_logical_view_ = _view_name(view)

    def default_distribute_strategy(self, view):
        print("WARNING: function_config.default_distribute_strategy will be removed soon. "
              "Please use function_config.default_logical_view instead.")
        self.default_logical_view(view)

    def default_placement_scope(self, placement_scope):
        # a flow.scope.placement(...) value: what tracing needs of it is its resolve(session)
        if not callable(getattr(placement_scope, "resolve", None)):
            raise TypeError("default_placement_scope expects flow.scope.placement(...), got %r" % (placement_scope,))
        self.default_placement_scope_ = placement_scope

    def default_initializer_conf(self, conf):
        self.default_initializer_conf_ = conf

    def enable_auto_mixed_precision(self, value=True):
        """OneFlow's AutoMixedPrecision job pass as v0.4.0 ran it (`function_util.py` / `auto_mixed_precision.cpp` @
        v0.4.0): ops on GPU placements compute in float16 where its lists say, variables stay float32; a CPU
        placement is left as it is (passes/amp.py with `amp_lists.V04`). Loss scaling is the optimizer's
        (`loss_scale_factor`, `loss_scale_policy`), as in v0.4."""
        # the job conf's bool field, set through pybind11's bool conversion: None is False, numbers convert, a
        # string or a container is refused
        if value is not None and not isinstance(value, (bool, int, float, np.bool_, np.number)):
            raise TypeError("function_config.enable_auto_mixed_precision expects a bool, got %r" % (value,))
        self.enable_auto_mixed_precision_ = bool(value)

    def implicit_boxing(self, mode="silent"):
        """oneflow_compat extension: 'silent' (legacy), 'warn' or 'error' when the compiler inserts boxing."""
        if mode not in ("silent", "warn", "error"):
            raise ValueError("implicit_boxing must be 'silent', 'warn' or 'error', got %r" % (mode,))
        self.implicit_boxing_ = mode

    def _setter(self, name):
        def set_flag(value=True):
            self.ignored[name] = value

        return set_flag

    def __getattr__(self, name):
        if name.startswith("_") or name.endswith("_"):
            raise AttributeError(name)
        if name in _IGNORED_FLAGS:
            if name == "enable_keep_header_only":
                def sorry(value=True):
                    print("Sorry! enable_keep_header_only is deprecated and it doesn't work.")
                return sorry
            if name in ("tensorrt", "qat"):
                return _Namespace(self, name)
            return self._setter(name)
        raise AttributeError("'FunctionConfig' has no option '%s'" % name)

    def clone(self):
        c = copy.copy(self)
        c.ignored = dict(self.ignored)
        c.train = _TrainConf(c)
        return c


class _TrainConf:
    """Legacy `func_config.train.*` (v0.1/v0.2 optimizer API)."""

    def __init__(self, cfg):
        self._cfg = cfg

    def _deprecated(self):
        print("WARNING: func_config.train.* has been deprecated. Please replace it by the new optimizer api.")
        self._cfg.job_type = "train"

    def primary_lr(self, lr):
        self._deprecated()
        self._cfg.primary_lr_ = float(lr)

    def secondary_lr(self, lr):
        self._deprecated()
        self._cfg.secondary_lr_ = float(lr)

    def model_update_conf(self, conf):
        self._deprecated()
        self._cfg.model_update_conf_ = dict(conf)

    def loss_scale_factor(self, factor):
        self._deprecated()
        self._cfg.loss_scale_factor_ = float(factor)

    def num_gradient_accumulation_steps(self, k):
        k = int(k)
        if k < 1:
            raise ValueError("num_gradient_accumulation_steps must be >= 1, got %d" % k)
        self._cfg.num_gradient_accumulation_steps_ = k
