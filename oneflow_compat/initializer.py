"""Variable initializers (`flow.*_initializer`, legacy-api.md §2.14): each returns an `InitializerConf`.

The confs and the generation of initial values from them live with the ops (`ops/initial_values.py`), where
the session's variable store reads them; `generate` and `initializer_conf_from_dict` are re-exported here.
"""
import math

from oneflow_compat.ir import dtypes
from oneflow_compat.ops.initial_values import (  # noqa: F401
    InitializerConf, generate, initializer_conf_from_dict, proto_float, proto_int32)

_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("truncated_normal", "random_normal", "random_uniform")


# ---------------------------------------------------------------------------------------------------------------
# public initializer functions (legacy signatures)
# ---------------------------------------------------------------------------------------------------------------

def _float_or_int_dtype(dtype):
    dtype = dtypes.as_dtype(dtype)
    if dtype is dtypes.float32 or dtype is dtypes.float64:
        return "float"
    if dtype is dtypes.int8 or dtype is dtypes.int32 or dtype is dtypes.int64:
        return "int"
    raise NotImplementedError("Do not support such data type")


def constant_initializer(value=0, dtype=dtypes.float32):
    if _float_or_int_dtype(dtype) == "float":
        return InitializerConf("constant", value=proto_float(value))
    return InitializerConf("constant_int", value=int(value))


def zeros_initializer(dtype=dtypes.float32):
    return constant_initializer(0.0, dtype)


def ones_initializer(dtype=dtypes.float32):
    return constant_initializer(1.0, dtype)


def random_uniform_initializer(minval=0, maxval=1, dtype=dtypes.float32):
    if not (minval <= maxval):
        raise AssertionError()
    if _float_or_int_dtype(dtype) == "float":
        return InitializerConf("random_uniform", min=proto_float(minval), max=proto_float(maxval))
    return InitializerConf("random_uniform_int", min=proto_int32(minval), max=proto_int32(maxval))


def random_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=None):
    if seed is not None:
        raise AssertionError()
    if dtype is not None:
        raise AssertionError()
    return InitializerConf("random_normal", mean=proto_float(mean), std=proto_float(stddev))


def truncated_normal_initializer(mean=0.0, stddev=1.0):
    return InitializerConf("truncated_normal", mean=proto_float(mean), std=proto_float(stddev))


def truncated_normal(stddev=1.0):
    """The deprecated top-level `flow.truncated_normal`: mean 0, truncated at ±2·stddev."""
    return truncated_normal_initializer(0.0, stddev)


def data_format_tag(data_format):
    """"NC..." -> "channels_first", "N...C" -> "channels_last", "" -> "" (OneFlow's get_data_format; also
    `flow.nn.init.get_data_format`)."""
    if not isinstance(data_format, str):
        raise AssertionError("data_format must be a string")
    if data_format.startswith("NC"):
        return "channels_first"
    if data_format.startswith("N") and data_format.endswith("C"):
        return "channels_last"
    if data_format != "":
        raise AssertionError('data_format must be "N...C" or "NC..." or ""')
    return ""


def variance_scaling_initializer(scale=1.0, mode="fan_in", distribution="truncated_normal", data_format=""):
    if mode.lower() not in _MODES:
        raise ValueError("Invalid variance_norm")
    if distribution.lower() not in _DISTRIBUTIONS:
        raise ValueError("Invalid random_distribution")
    return InitializerConf("variance_scaling", scale=proto_float(scale), mode=mode.lower(),
                           distribution=distribution.lower(), data_format=data_format_tag(data_format))


def glorot_uniform_initializer(data_format=""):
    return variance_scaling_initializer(1.0, "fan_avg", "random_uniform", data_format)


def glorot_normal_initializer(data_format=""):
    return variance_scaling_initializer(1.0, "fan_avg", "random_normal", data_format)


xavier_uniform_initializer = glorot_uniform_initializer
xavier_normal_initializer = glorot_normal_initializer


def weight_fans(shape, data_format_tag):
    """(fan_in, fan_out) of a weight `shape` by OneFlow's initializer formula (`initializer_util.calc_fan`): a dense
    weight (out, in) has in and out; a conv weight has the product of shape[1:] in, and shape[0] times the spatial
    dims ("channels_first": shape[2:], else shape[1:-1]) out. Also `flow.nn.init.calc_fan`'s."""
    if len(shape) == 2:  # dense weight (out, in)
        return shape[1], shape[0]
    fan_in = 1.0
    for d in shape[1:]:
        fan_in *= d
    fan_out = shape[0]
    for d in (shape[2:] if data_format_tag == "channels_first" else shape[1:-1]):
        fan_out *= d
    return fan_in, fan_out


def _kaiming_fan(shape, mode, data_format_tag):
    fan_in, fan_out = weight_fans(shape, data_format_tag)
    if mode == "fan_avg":
        return (float(fan_in) + float(fan_out)) / 2
    return float(fan_in) if mode == "fan_in" else float(fan_out)


def _kaiming_gain(nonlinearity, negative_slope):
    if nonlinearity is None or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    slope = 0.01 if negative_slope is None else negative_slope
    return math.sqrt(2.0 / (1 + slope ** 2))


def kaiming_initializer(shape, distribution="random_normal", mode="fan_in", nonlinearity="leaky_relu",
                        negative_slope=0.0, data_format="NCHW"):
    """He initialization; the std is computed here from `shape`, so it returns a plain normal/uniform conf."""
    if not isinstance(shape, tuple):
        raise AssertionError()
    if not (len(shape) >= 2):
        raise AssertionError()
    if not (math.prod(shape) > 0):
        raise AssertionError()
    if distribution not in ["random_normal", "random_uniform"]:
        raise AssertionError()
    if mode not in ["fan_in", "fan_out", "fan_avg"]:
        raise AssertionError()
    if nonlinearity not in [None, "tanh", "sigmoid", "relu", "leaky_relu"]:
        raise AssertionError()
    if data_format not in ["NCHW", "NHWC"]:
        raise AssertionError()
    fan = _kaiming_fan(shape, mode, data_format_tag(data_format))
    std = _kaiming_gain(nonlinearity, negative_slope) / math.sqrt(fan)
    if distribution == "random_normal":
        return random_normal_initializer(0.0, std)
    bound = math.sqrt(3.0) * std
    return random_uniform_initializer(-bound, bound)


def empty_initializer(dtype=dtypes.float32):
    return InitializerConf("empty")
