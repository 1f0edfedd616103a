"""`oneflow.boxing.nccl` (OneFlow 0.9, python/oneflow/boxing/nccl/__init__.py): the NCCL settings of the resource
configuration, names and argument types as OneFlow's config_util.py has them (see the package docstring)."""
from oneflow_compat.boxing.settings import set_resource_attr as _set

_BOXING = "collective_boxing_conf"


def _setting(name, path, type_, doc):
    def setter(val):
        _set(path, val, type_)

    setter.__name__ = name
    setter.__doc__ = doc
    return setter


set_fusion_threshold_mbytes = _setting("set_fusion_threshold_mbytes", [_BOXING, "nccl_fusion_threshold_mb"], int,
                                       "The size (MB) under which collectives are fused.")
set_fusion_max_ops_num = _setting("set_fusion_max_ops_num", [_BOXING, "nccl_fusion_max_ops"], int,
                                  "The most collectives fused into one.")
allow_fuse_all_reduce = _setting("allow_fuse_all_reduce", [_BOXING, "nccl_fusion_all_reduce"], bool,
                                 "Whether all-reduces may be fused.")
allow_fuse_reduce_scatter = _setting("allow_fuse_reduce_scatter", [_BOXING, "nccl_fusion_reduce_scatter"], bool,
                                     "Whether reduce-scatters may be fused.")
allow_fuse_all_gather = _setting("allow_fuse_all_gather", [_BOXING, "nccl_fusion_all_gather"], bool,
                                 "Whether all-gathers may be fused.")
allow_fuse_reduce = _setting("allow_fuse_reduce", [_BOXING, "nccl_fusion_reduce"], bool,
                             "Whether reduces may be fused.")
allow_fuse_broadcast = _setting("allow_fuse_broadcast", [_BOXING, "nccl_fusion_broadcast"], bool,
                                "Whether broadcasts may be fused.")
allow_fuse_mixed_ops = _setting("allow_fuse_mixed_ops", [_BOXING, "nccl_enable_mixed_fusion"], bool,
                                "Whether collectives of different kinds may be fused together.")
enable_use_buffer_to_fuse_all_reduce = _setting("enable_use_buffer_to_fuse_all_reduce",
                                                [_BOXING, "nccl_fusion_all_reduce_use_buffer"], bool,
                                                "Whether fused all-reduces go through a buffer.")
set_stream_num = _setting("set_stream_num", [_BOXING, "nccl_num_streams"], int, "The number of NCCL streams.")
enable_all_to_all = _setting("enable_all_to_all", [_BOXING, "nccl_enable_all_to_all"], bool,
                             "Whether S->S boxing may use all-to-all.")
enable_use_compute_stream = _setting("enable_use_compute_stream", ["nccl_use_compute_stream"], bool,
                                     "Whether NCCL runs on the compute stream.")
disable_group_boxing_by_dst_parallel = _setting("disable_group_boxing_by_dst_parallel",
                                                ["disable_group_boxing_by_dst_parallel"], bool,
                                                "Whether the group-boxing-by-destination pass is off.")
