"""`oneflow.backends.cudnn` (OneFlow 0.9): setters of OneFlow's C++ runtime configuration — reserved device memory,
cuDNN's fused normalization + add + relu, cuDNN's heuristic convolution algorithm search. They tune kernels and
memory that this implementation does not have, so they are accepted (with OneFlow's type check) and do nothing,
as the legacy `flow.config` setters of the same kind."""

__all__ = ["set_reserved_mem_mbytes", "enable_fused_normalization_add_relu", "enable_conv_heuristic_search_algo"]


def _check(attrs, value, kind):
    assert isinstance(value, kind), "Attribute %r type unmatched! Expected: %s but get: %s" % (attrs, kind,
                                                                                             type(value))


def set_reserved_mem_mbytes(val):
    _check("reserved_device_mem_mbyte", val, int)


def enable_fused_normalization_add_relu(val):
    _check(["cudnn_conf", "enable_cudnn_fused_normalization_add_relu"], val, bool)


def enable_conv_heuristic_search_algo(val):
    _check(["cudnn_conf", "cudnn_conv_heuristic_search_algo"], val, bool)
