"""Initializer confs and the initial values of variables (legacy-api.md §2.14).

An initializer is an `InitializerConf` (kind + parameters, the analogue of OneFlow's InitializerConf protobuf);
`generate(conf, shape, np_dtype, seed)` produces the full logical value exactly as OneFlow's model-IO-v2 `Init`
did: one `np.random.default_rng(seed)` stream per variable, drawn in float64 slice by slice in C order (slices as
OneFlow's checkpoint code cut them, which matters only for truncated normals of variables above 32 MiB), then
cast to the variable's dtype. The value depends only on (conf, shape, dtype, seed), never on how the variable
is split across devices.

The session's variable store generates values from here; `flow.*_initializer` (`oneflow_compat/initializer.py`)
only builds the confs.
"""
import math

import numpy as np

_KINDS = (
    "constant", "constant_int", "random_uniform", "random_uniform_int", "random_normal", "truncated_normal",
    "variance_scaling", "empty",
)


def proto_float(x):
    # InitializerConf stores these fields as protobuf `float`: the value OneFlow used is the float32 rounding.
    return float(np.float32(x))


def proto_int32(x):
    value = int(x)
    if not -2 ** 31 <= value < 2 ** 31:
        raise ValueError("initializer bound %d does not fit the int32 protobuf field" % value)
    return value


class InitializerConf:
    """Kind (`constant`, `random_uniform`, …) and parameters of an initializer, as OneFlow stored them."""

    __slots__ = ("kind", "params")

    def __init__(self, kind, **params):
        if kind not in _KINDS:
            raise ValueError("unknown initializer kind %r (known: %s)" % (kind, ", ".join(_KINDS)))
        self.kind = kind
        self.params = dict(params)

    def __getattr__(self, name):
        try:
            return object.__getattribute__(self, "params")[name]
        except KeyError:
            raise AttributeError("%s initializer has no parameter %r" % (self.kind, name)) from None

    def __eq__(self, other):
        return isinstance(other, InitializerConf) and (self.kind, self.params) == (other.kind, other.params)

    def __hash__(self):
        return hash((self.kind, tuple(sorted(self.params.items()))))

    def __repr__(self):
        args = ", ".join("%s=%r" % item for item in self.params.items())
        return "InitializerConf(%s%s)" % (self.kind, ": " + args if args else "")


_DICT_FIELDS = {
    "constant_conf": ("constant", ("value",)),
    "constant_int_conf": ("constant_int", ("value",)),
    "random_uniform_conf": ("random_uniform", ("min", "max")),
    "random_uniform_int_conf": ("random_uniform_int", ("min", "max")),
    "random_normal_conf": ("random_normal", ("mean", "std")),
    "truncated_normal_conf": ("truncated_normal", ("mean", "std")),
    "variance_scaling_conf": ("variance_scaling", ("scale", "variance_norm", "distribution", "data_format")),
    "empty_conf": ("empty", ()),
}
_PROTO_DEFAULTS = {
    "constant": {"value": 0.0}, "constant_int": {"value": 0}, "random_uniform": {"min": 0.0, "max": 1.0},
    "random_uniform_int": {"min": 0, "max": 1}, "random_normal": {"mean": 0.0, "std": 1.0},
    "truncated_normal": {"mean": 0.0, "std": 1.0}, "empty": {},
}
_VARIANCE_NORM_ENUM = {"kFanIn": "fan_in", "kFanOut": "fan_out", "kAverage": "fan_avg"}
_DISTRIBUTION_ENUM = {"kTruncatedNormal": "truncated_normal", "kRandomNormal": "random_normal",
                      "kRandomUniform": "random_uniform"}


def initializer_conf_from_dict(conf):
    """InitializerConf from a protobuf-style dict, e.g. `{"random_uniform_conf": {"min": -1, "max": 1}}`
    (the form `function_config.default_initializer_conf` takes). An InitializerConf passes through."""
    if isinstance(conf, InitializerConf):
        return conf
    if not isinstance(conf, dict) or len(conf) != 1:
        raise ValueError("an initializer conf dict has exactly one key among %s, got %r" % (sorted(_DICT_FIELDS), conf))
    (field, body), = conf.items()
    if field not in _DICT_FIELDS:
        raise ValueError("unknown initializer conf %r (known: %s)" % (field, ", ".join(sorted(_DICT_FIELDS))))
    kind, names = _DICT_FIELDS[field]
    body = dict(body or {})
    unknown = set(body) - set(names)
    if unknown:
        raise ValueError("%s has no field(s) %s" % (field, ", ".join(sorted(unknown))))
    if kind == "variance_scaling":
        mode = _VARIANCE_NORM_ENUM.get(body.get("variance_norm", "kFanIn"), body.get("variance_norm"))
        distribution = _DISTRIBUTION_ENUM.get(body.get("distribution", "kTruncatedNormal"),
                                              body.get("distribution"))
        return InitializerConf("variance_scaling", scale=proto_float(body.get("scale", 1.0)), mode=mode,
                               distribution=distribution, data_format=body.get("data_format", ""))
    params = dict(_PROTO_DEFAULTS[kind], **body)
    convert = proto_int32 if kind == "random_uniform_int" else int if kind == "constant_int" else proto_float
    return InitializerConf(kind, **{k: convert(v) for k, v in params.items()})


# ---------------------------------------------------------------------------------------------------------------
# generation
# ---------------------------------------------------------------------------------------------------------------

_SLICE_BYTES = 32 * 1024 * 1024  # OneFlow's checkpoint slice size


def _slice_lengths(shape, itemsize):
    """Element counts of the C-order slices OneFlow generated a variable in (its `_ForEachSlice` rule)."""
    size = math.prod(shape)
    if size == 0:
        return []
    if len(shape) == 0:
        return [1]
    slice_len = _SLICE_BYTES // itemsize
    count, axis = 1, 0
    for axis in reversed(range(len(shape))):
        count *= shape[axis]
        if count > slice_len:
            break
    unit_size = math.prod(shape[axis + 1:])
    max_units = slice_len // unit_size
    lengths = []
    for _ in range(math.prod(shape[:axis])):
        remaining = shape[axis]
        while remaining > 0:
            units = min(max_units, remaining)
            lengths.append(units * unit_size)
            remaining -= units
    return lengths


def _truncated_normal(rng, mean, std, length):
    # Rejection sampling: keep draws with |x - mean| < 2·std, drawing 1.2x what is still missing each round.
    out = np.empty(length)
    filled = 0
    while filled < length:
        missing = length - filled
        draws = rng.normal(mean, std, size=int(missing * 1.2))
        kept = draws[np.abs(draws - mean) < 2 * std][:missing]
        out[filled:filled + kept.size] = kept
        filled += kept.size
    return out


def _variance_scaling_fan(shape, mode):
    # OneFlow compared data_format with "channel_first" while storing "channels_first", so fan_out always
    # multiplies shape[1:-1] (a source quirk kept on purpose: for conv weights it is F·C·kh, not F·kh·kw).
    fan_in = int(math.prod(shape[1:]))
    fan_out = shape[0] * int(math.prod(shape[1:-1]))
    if mode == "fan_avg":
        return (fan_in + fan_out) / 2
    return fan_in if mode == "fan_in" else fan_out


def _sampler(conf, shape, seed):
    """A function length -> values (float64 or int64) continuing one RNG stream, for `conf`."""
    kind, p = conf.kind, conf.params
    if kind in ("constant", "constant_int"):
        return lambda length: np.full((length,), p["value"])
    rng = np.random.default_rng(seed)
    if kind == "random_uniform":
        high = np.nextafter(p["max"], float("inf"))
        return lambda length: rng.uniform(low=p["min"], high=high, size=length)
    if kind == "random_uniform_int":
        # both bounds included: OneFlow's RngIntUniform (core/kernel/kernel_util.cpp, v0.3.4/v0.4.0) builds
        # uniform_int_distribution(min, nextafter(max, max_value)) the double that nextafter returns truncates back to
        # max, so the zoo's flow.random_uniform_initializer(dtype=flow.int32) (0 and 1) draws labels 0 and 1
        return lambda length: rng.integers(low=p["min"], high=p["max"], size=length, endpoint=True)
    if kind == "random_normal":
        return lambda length: rng.normal(loc=p["mean"], scale=p["std"], size=length)
    if kind == "truncated_normal":
        return lambda length: _truncated_normal(rng, p["mean"], p["std"], length)
    if kind == "variance_scaling":
        if len(shape) == 0:
            raise ValueError("variance scaling initializers need a variable with at least one dimension")
        s = p["scale"] / _variance_scaling_fan(shape, p["mode"])
        if p["distribution"] == "truncated_normal":
            std = math.sqrt(s) / 0.87962566103423978
            return lambda length: _truncated_normal(rng, 0, std, length)
        if p["distribution"] == "random_normal":
            std = math.sqrt(s)
            return lambda length: rng.normal(0, std, size=length)
        limit = math.sqrt(3.0 * s)
        return lambda length: rng.uniform(low=-limit, high=limit, size=length)
    raise ValueError("cannot generate values for initializer kind %r" % kind)


def generate(conf, shape, np_dtype, seed):
    """The initial value (full logical `shape`, dtype `np_dtype`) of a variable with initializer `conf` and
    random seed `seed`. The empty initializer (OneFlow: memory left as allocated) gives zeros here."""
    conf = initializer_conf_from_dict(conf)
    shape = tuple(int(d) for d in shape)
    np_dtype = np.dtype(np_dtype)
    if conf.kind == "empty" or math.prod(shape) == 0:
        return np.zeros(shape, np_dtype)
    draw = _sampler(conf, shape, seed)
    flat = np.empty(math.prod(shape), np_dtype)
    start = 0
    for length in _slice_lengths(shape, np_dtype.itemsize):
        flat[start:start + length] = draw(length)  # unsafe cast, like OneFlow's .astype(np_dtype)
        start += length
    return flat.reshape(shape)
