"""Mechanical check of the SBP signatures ops declare.

An op is correct on N devices only if every signature its `sbp` rule declares computes the same logical result as
one device. For each op type with example inputs, this module builds the op in a throwaway job on 1, 2, 3 and 4
simulated devices (so the op's own `infer` and `sbp` rules run), and for every declared signature:

* cuts each logical input into the pieces the signature names: `S(k)` balanced slices (`ir.sbp`), `B` a full
  copy per device, `P` random addends that sum to the value;
* runs the op's per-device function on each piece exactly as the plan does (`passes.plan.DeviceSlot` +
  `device_fn`);
* assembles each output per its SBP (concatenate / sum / take one, checking that `B` copies agree and that every
  piece has the shape the plan expects) and compares it with the one-device result.

`python -m oneflow_compat.tools.validate [op_type ...]` prints one line per (op, example, signature, device count).
"""
import dataclasses
import importlib
import pkgutil
import sys

import numpy as np

from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import Job
from oneflow_compat.ir.placement import Placement
from oneflow_compat.ops import registry
from oneflow_compat.ops import transitions as boxing_impl
from oneflow_compat.passes import plan

# Ops whose per-device function needs the running session (variables, fed inputs, schedules, collectives) or
# that exist only as framework plumbing: they have no stand-alone kernel to replay.
SKIPPED = {
    "input": "fed from the job call (its pieces come from runtime.executor.CompiledJob.feed)",
    "variable": "its pieces are the session's variable shards",
    "optimizer_update": "updates session variables in place; covered by the training tests",
    "learning_rate": "reads the session's LR scheduler; all-broadcast by construction",
    "increment": "updates the session's step counter in place",
    "watch": "a callback on the fetched value; its SBP is whatever its input has (passthrough)",
    "boxing": "boxing is the transition itself (tests/test_boxing_transitions.py)",
    "moving_average_update": "updates session variables in place; covered by the normalization tests",
    "loss_scale_update": "updates the dynamic loss-scale state variables in place",
}

_RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-10}


class Example:
    """Inputs (made by `make(rng) -> [arrays]`) and attrs for one instance of an op."""

    def __init__(self, make, attrs=None, note=""):
        self.make = make
        self.attrs = dict(attrs or {})
        self.note = note


@dataclasses.dataclass
class Check:
    op_type: str
    example: str
    signature: str
    devices: int
    ok: bool
    message: str = ""

    def __str__(self):
        return "%s [%s] %s on %d devices: %s" % (self.op_type, self.example, self.signature, self.devices,
                                                 "OK" if self.ok else "FAIL " + self.message)


# --- example inputs --------------------------------------------------------------------------------------------
# Shapes use sizes that 2, 3 and 4 devices do not all divide (5, 7, 6), so uneven balanced splits are exercised.
def _normal(*shape, dtype=np.float64):
    return lambda r: r.standard_normal(shape).astype(dtype)


def _positive(*shape, dtype=np.float64, low=0.5, high=2.0):
    return lambda r: r.uniform(low, high, shape).astype(dtype)


def _ints(*shape, low=0, high=4, dtype=np.int32):
    return lambda r: r.integers(low, high, shape).astype(dtype)


def _away_from_zero(*shape, dtype=np.float64):
    return lambda r: (r.uniform(0.5, 2.0, shape) * r.choice([-1.0, 1.0], shape)).astype(dtype)


def _inputs(*makers):
    return lambda r: [m(r) for m in makers]


def _softmax_rows(shape, axis):
    def make(r):
        x = r.standard_normal(shape)
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    return make


def _binary_examples(a=_normal, b=_normal):
    return [Example(_inputs(a(5, 7), b(5, 7)), note="same shape"),
            Example(_inputs(a(4, 5, 1), b(5, 7)), note="broadcast both"),
            Example(_inputs(a(6, 7), b(7)), note="rank-1 b")]


def _unary_examples(make=_normal):
    return [Example(_inputs(make(5, 7))), Example(_inputs(make(4, 5, 6)), note="3-d")]


def _reduction_examples(make=_normal):
    return [Example(_inputs(make(5, 7)), {"axis": [1], "keepdims": False}),
            Example(_inputs(make(5, 7)), {"axis": [0], "keepdims": True}),
            Example(_inputs(make(4, 5, 6)), {"axis": [0, 2], "keepdims": False}),
            Example(_inputs(make(4, 5, 6)), {"axis": None, "keepdims": False})]


def _pair(make_dy, make_x, *shape):
    return [Example(_inputs(make_dy(*shape), make_x(*shape)))]


EXAMPLES = {
    "reduce_to_shape": [Example(_inputs(_normal(4, 5, 6)), {"shape": (5, 1)}),
                        Example(_inputs(_normal(4, 5, 6)), {"shape": (4, 1, 6)}),
                        Example(_inputs(_normal(7, 3)), {"shape": (3,)})],
    "add": _binary_examples(),
    "subtract": _binary_examples(),
    "multiply": _binary_examples(),
    "divide": _binary_examples(b=_away_from_zero),
    "maximum": _binary_examples(),
    "minimum": _binary_examples(),
    "pow": _binary_examples(a=_positive),
    "floor_mod": _binary_examples(b=_away_from_zero),
    "equal": [Example(_inputs(_ints(5, 7), _ints(5, 7))), Example(_inputs(_ints(4, 5, 1), _ints(5, 7)))],
    "not_equal": [Example(_inputs(_ints(5, 7), _ints(5, 7)))],
    "less": _binary_examples(),
    "less_equal": [Example(_inputs(_ints(5, 7), _ints(5, 7)))],
    "greater": _binary_examples(),
    "greater_equal": [Example(_inputs(_ints(5, 7), _ints(4, 1, 7)))],
    "logical_and": [Example(_inputs(_ints(5, 7, high=2), _ints(5, 7, high=2)))],
    "scalar_add": [Example(_inputs(_normal(5, 7)), {"value": 1.5})],
    "scalar_pow": [Example(_inputs(_positive(5, 7)), {"value": 2.5})],
    "scalar_rsub": [Example(_inputs(_normal(5, 7)), {"value": 3.0})],
    "scalar_rdiv": [Example(_inputs(_away_from_zero(5, 7)), {"value": 2.0})],
    "scalar_mod": [Example(_inputs(_normal(5, 7)), {"value": 0.7})],
    "scalar_mul": [Example(_inputs(_normal(5, 7)), {"value": -1.25}),
                   Example(_inputs(_normal(5, 7, dtype=np.float32)), {"value": 0.1})],
    "negative": _unary_examples(),
    "exp": _unary_examples(),
    "log": _unary_examples(_positive),
    "sqrt": _unary_examples(_positive),
    "rsqrt": _unary_examples(_positive),
    "square": _unary_examples(),
    "abs": _unary_examples(),
    "sign": _unary_examples(),
    "floor": _unary_examples(),
    "ceil": _unary_examples(),
    "round": _unary_examples(),
    "reciprocal": _unary_examples(_away_from_zero),
    "sin": _unary_examples(),
    "cos": _unary_examples(),
    "log1p": _unary_examples(_positive),
    "expm1": _unary_examples(),
    "logical_not": [Example(_inputs(_ints(5, 7, high=2)))],
    "identity": _unary_examples(),
    "relu": _unary_examples(),
    "sigmoid": _unary_examples(),
    "tanh": _unary_examples(),
    "leaky_relu": [Example(_inputs(_normal(5, 7)), {"alpha": 0.2})],
    "relu_grad": _pair(_normal, _positive, 5, 7) + [Example(_inputs(_normal(5, 7), _normal(5, 7)), note="y<=0")],
    "sigmoid_grad": _pair(_normal, _positive, 5, 7),
    "tanh_grad": _pair(_normal, _normal, 5, 7),
    "leaky_relu_grad": [Example(_inputs(_normal(5, 7), _normal(5, 7)), {"alpha": 0.2})],
    "fill_like": [Example(_inputs(_normal(5, 7)), {"value": 3.0})],
    "cast": [Example(_inputs(_normal(5, 7)), {"dtype": dtypes.float32}),
             Example(_inputs(_ints(5, 7, low=-9, high=9)), {"dtype": dtypes.float64}),
             Example(lambda r: [r.uniform(-9.0, 9.0, (5, 7))], {"dtype": dtypes.int32}, note="float -> int")],
    "reduce_sum": _reduction_examples(),
    "reduce_mean": _reduction_examples(),
    "reduce_max": _reduction_examples(),
    "reduce_min": _reduction_examples(),
    "reduce_prod": _reduction_examples(_positive),
    "reduce_any": _reduction_examples(lambda *s: _ints(*s, high=2)),
    "reduce_all": _reduction_examples(lambda *s: _ints(*s, low=0, high=5)),
    "argmax": [Example(_inputs(_normal(5, 7))), Example(_inputs(_normal(4, 5, 6))), Example(_inputs(_normal(7)))],
    "broadcast_like": [Example(_inputs(_normal(1, 7), _normal(5, 7))),
                       Example(_inputs(_normal(4, 1, 6), _normal(4, 5, 6))),
                       Example(_inputs(_normal(5, 7), _normal(5, 7)), note="no broadcast")],
    "matmul": [Example(_inputs(_normal(5, 6), _normal(6, 7)), {"transpose_a": False, "transpose_b": False}),
               Example(_inputs(_normal(6, 5), _normal(6, 7)), {"transpose_a": True, "transpose_b": False}),
               Example(_inputs(_normal(5, 6), _normal(7, 6)), {"transpose_a": False, "transpose_b": True}),
               Example(_inputs(_normal(6, 5), _normal(7, 6)), {"transpose_a": True, "transpose_b": True,
                                                               "alpha": 0.5}),
               Example(_inputs(_normal(3, 5, 6), _normal(3, 6, 4)), {"transpose_a": False, "transpose_b": False},
                       note="batched"),
               Example(_inputs(_normal(5, 6, dtype=np.float32), _normal(6, 7, dtype=np.float32)),
                       {"transpose_a": False, "transpose_b": False}, note="float32")],
    "bias_add": [Example(_inputs(_normal(5, 7), _normal(7)), {"axis": 1}),
                 Example(_inputs(_normal(4, 6, 5), _normal(6)), {"axis": 1}),
                 Example(_inputs(_normal(5, 7), _normal(7)), {"axis": -1})],
    "softmax": [Example(_inputs(_normal(5, 7)), {"axis": -1}), Example(_inputs(_normal(4, 5, 6)), {"axis": 1})],
    "softmax_grad": [Example(lambda r: [r.standard_normal((5, 7)), _softmax_rows((5, 7), 1)(r)], {"axis": -1}),
                     Example(lambda r: [r.standard_normal((4, 5, 6)), _softmax_rows((4, 5, 6), 1)(r)],
                             {"axis": 1})],
    "sparse_softmax_cross_entropy": [Example(_inputs(_normal(6, 5), _ints(6, high=5))),
                                     Example(_inputs(_normal(4, 3, 5), _ints(4, 3, high=5)), note="2-d labels")],
    "sparse_softmax_cross_entropy_grad": [Example(lambda r: [r.standard_normal(6), _softmax_rows((6, 5), 1)(r),
                                                             _ints(6, high=5)(r)])],
    "reshape": [Example(_inputs(_normal(6, 4)), {"shape": (6, 2, 2)}),
                Example(_inputs(_normal(4, 5, 6)), {"shape": (4, -1)}),
                Example(_inputs(_normal(4, 5, 6)), {"shape": (20, 6)}),
                Example(_inputs(_normal(4, 5, 6)), {"shape": (4, 5, 3, 2)})],
    "reshape_like": [Example(_inputs(_normal(4, 6), _normal(4, 2, 3))),
                     Example(_inputs(_normal(4, 6), _normal(24)))],
    "constant": [Example(lambda r: [], {"shape": (5, 3), "value": 2.5, "dtype": dtypes.float32}),
                 Example(lambda r: [], {"shape": (7,), "value": 4, "dtype": dtypes.int32})],
    "add_n": [Example(_inputs(_normal(5, 7), _normal(5, 7), _normal(5, 7))),
              Example(_inputs(_normal(5, 7), _normal(5, 7)))],
    "mul_by_scalar_tensor": [Example(_inputs(_normal(5, 7), _normal(1)))],
    "div_by_scalar_tensor": [Example(_inputs(_normal(5, 7), _positive(1)))],
    "reduce_sum_square": [Example(_inputs(_normal(5, 7))), Example(_inputs(_normal(4, 5, 6)))],
    "global_norm_clip_scale": [Example(_inputs(_positive(1, low=0.1, high=9.0)), {"clip_norm": 1.0})],
    "add_regularization": [Example(_inputs(_normal(5, 7), _normal(5, 7)), {"l1": 0.1, "l2": 0.01})],
}


def _conv_attrs(fmt="NCHW", strides=(1, 1), pads=((1, 1), (0, 1)), dilations=(1, 1), groups=1, **extra):
    return dict({"strides": strides, "pads": pads, "dilations": dilations, "groups": groups, "data_format": fmt},
                **extra)


def _pool_attrs(fmt="NCHW", ksize=(2, 2), strides=(2, 2), pads=((0, 0), (0, 0)), ceil_mode=False, **extra):
    return dict({"ksize": ksize, "strides": strides, "pads": pads, "data_format": fmt, "ceil_mode": ceil_mode},
                **extra)


def _conv_out(x_shape, w_shape, attrs):
    from oneflow_compat.kernels import nn as nn_k

    return nn_k.conv2d(np, np.zeros(x_shape), np.zeros(w_shape), **attrs).shape


def _max_pool_grad_inputs(x_shape, attrs):
    def make(r):
        from oneflow_compat.kernels import nn as nn_k

        x = r.standard_normal(x_shape)
        y = nn_k.max_pool2d(np, x, **attrs)
        return [r.standard_normal(y.shape), x, y]
    return make


def _avg_pool_grad_inputs(x_shape, attrs):
    def make(r):
        from oneflow_compat.kernels import nn as nn_k

        return [r.standard_normal(nn_k.avg_pool2d(np, np.zeros(x_shape), **attrs).shape)]
    return make


def _with_nonfinite(*shape):
    def make(r):
        g = r.standard_normal(shape)
        flat = g.reshape(-1)
        flat[r.choice(flat.size, 6, replace=False)] = [np.inf, -np.inf, np.nan, np.nan, np.inf, np.nan]
        return [g]
    return make


def _probabilities(*shape):
    return _softmax_rows(shape, len(shape) - 1)


# (x shape, w shape, attrs): NCHW, NHWC, strided/dilated, grouped
_CONV_CASES = [((5, 4, 6, 6), (6, 4, 3, 3), _conv_attrs()),
               ((5, 6, 6, 4), (6, 3, 3, 4), _conv_attrs("NHWC")),
               ((5, 4, 7, 7), (3, 4, 2, 3), _conv_attrs(strides=(2, 1), dilations=(1, 2))),
               ((5, 4, 6, 6), (6, 2, 3, 3), _conv_attrs(groups=2))]
_POOL_CASES = [((5, 4, 6, 6), _pool_attrs()),
               ((5, 6, 7, 4), _pool_attrs("NHWC", ksize=(3, 2), strides=(2, 1), pads=((1, 0), (0, 1)),
                                          ceil_mode=True))]

EXAMPLES.update({
    "conv2d": [Example(_inputs(_normal(*xs), _normal(*ws)), a) for xs, ws, a in _CONV_CASES],
    "conv2d_grad_input": [Example(_inputs(_normal(*_conv_out(xs, ws, a)), _normal(*ws)), dict(a, input_shape=xs))
                          for xs, ws, a in _CONV_CASES],
    "conv2d_grad_weight": [Example(_inputs(_normal(*_conv_out(xs, ws, a)), _normal(*xs)), dict(a, weight_shape=ws))
                           for xs, ws, a in _CONV_CASES],
    "max_pool2d": [Example(_inputs(_normal(*xs)), a) for xs, a in _POOL_CASES],
    "max_pool2d_grad": [Example(_max_pool_grad_inputs(xs, a), a) for xs, a in _POOL_CASES],
    "avg_pool2d": [Example(_inputs(_normal(*xs)), a) for xs, a in _POOL_CASES],
    "avg_pool2d_grad": [Example(_avg_pool_grad_inputs(xs, a), dict(a, input_shape=xs)) for xs, a in _POOL_CASES],
    "dropout": [Example(_inputs(_normal(5, 7)), {"rate": 0.3, "seed": 7}),
                Example(_inputs(_normal(4, 5, 6, dtype=np.float32)), {"rate": 0.5, "seed": None},
                        note="session seed")],
    "dropout_grad": [Example(lambda r: [r.standard_normal((5, 7)), r.integers(0, 2, (5, 7)).astype(np.int8)],
                             {"rate": 0.3})],
    "softmax_cross_entropy": [Example(lambda r: [r.standard_normal((6, 5)), _probabilities(6, 5)(r)]),
                              Example(lambda r: [r.standard_normal((4, 3, 5)), _probabilities(4, 3, 5)(r)])],
    "softmax_cross_entropy_grad": [Example(lambda r: [r.standard_normal(6), _probabilities(6, 5)(r),
                                                      _probabilities(6, 5)(r)])],
    "sigmoid_cross_entropy": [Example(lambda r: [r.standard_normal((5, 7)), r.uniform(0, 1, (5, 7))])],
    "sigmoid_cross_entropy_grad": [Example(lambda r: [r.standard_normal((5, 7)), r.standard_normal((5, 7)),
                                                      r.uniform(0, 1, (5, 7))])],
    "transpose": [Example(_inputs(_normal(4, 5, 6)), {"perm": (2, 0, 1)}),
                  Example(_inputs(_normal(5, 7)), {"perm": (1, 0)})],
    "concat": [Example(_inputs(_normal(5, 3), _normal(5, 4)), {"axis": 1}),
               Example(_inputs(_normal(3, 7), _normal(4, 7), _normal(2, 7)), {"axis": 0})],
    "split_like": [Example(_inputs(_normal(5, 7), _normal(5, 3), _normal(5, 4)), {"axis": 1}),
                   Example(_inputs(_normal(7, 5), _normal(2, 5), _normal(5, 5)), {"axis": 0})],
    "slice": [Example(_inputs(_normal(5, 7, 4)), {"slice_tup": [(None, None, None), (1, 6, 2), (None, None, None)]}),
              Example(_inputs(_normal(6, 7)), {"slice_tup": [(1, None, None), (None, None, None)]})],
    "slice_grad": [Example(_inputs(_normal(5, 3, 4), _normal(5, 7, 4)),
                           {"slice_tup": [(None, None, None), (1, 6, 2), (None, None, None)]})],
    "expand_dims": [Example(_inputs(_normal(5, 7)), {"axis": 1}), Example(_inputs(_normal(5, 7)), {"axis": 2}),
                    Example(_inputs(_normal(5, 7)), {"axis": 0})],
    "squeeze": [Example(_inputs(_normal(5, 1, 7)), {"axes": (1,)}),
                Example(_inputs(_normal(1, 6, 1)), {"axes": (0, 2)})],
    "flatten": [Example(_inputs(_normal(4, 5, 6)), {"start_dim": 1, "end_dim": 2}),
                Example(_inputs(_normal(4, 5, 6)), {"start_dim": 0, "end_dim": 1}),
                Example(_inputs(_normal(4, 5, 6)), {"start_dim": 1, "end_dim": 1})],
    "gather": [Example(_inputs(_normal(7, 5), _ints(4, high=7)), {"axis": 0}),
               Example(_inputs(_normal(4, 7, 3), _ints(2, 5, high=7)), {"axis": 1})],
    "gather_grad": [Example(_inputs(_normal(4, 5), _ints(4, high=7), _normal(7, 5)), {"axis": 0}),
                    Example(_inputs(_normal(4, 2, 5, 3), _ints(2, 5, high=7), _normal(4, 7, 3)), {"axis": 1})],
    "batch_gather": [Example(_inputs(_normal(5, 7, 3), _ints(5, 4, high=7))),
                     Example(_inputs(_normal(4, 5, 6), _ints(4, 5, 2, high=6)), note="2 batch dims")],
    "batch_gather_grad": [Example(_inputs(_normal(5, 4, 3), _ints(5, 4, high=7), _normal(5, 7, 3)))],
    "one_hot": [Example(_inputs(_ints(5, high=6)), {"depth": 6, "on_value": 1, "off_value": 0,
                                                     "dtype": dtypes.float32, "axis": 1}),
                Example(_inputs(_ints(4, 5, high=3)), {"depth": 3, "on_value": 2, "off_value": -1,
                                                        "dtype": dtypes.int32, "axis": 0})],
    "pad": [Example(_inputs(_normal(5, 7)), {"paddings": ((0, 0), (1, 2)), "constant_value": 0}),
            Example(_inputs(_normal(5, 7)), {"paddings": ((2, 0), (0, 0)), "constant_value": 1.5})],
    "pad_grad": [Example(_inputs(_normal(5, 10)), {"paddings": ((0, 0), (1, 2))})],
    "where": [Example(_inputs(_ints(5, 7, high=2, dtype=np.int8), _normal(5, 7), _normal(5, 7))),
              Example(_inputs(_ints(5, 1, high=2, dtype=np.int8), _normal(5, 7), _normal(7)), note="broadcast")],
    "clip_by_value": [Example(_inputs(_normal(5, 7)), {"min_value": -0.5, "max_value": 0.5}),
                      Example(_inputs(_normal(5, 7)), {"min_value": None, "max_value": 0.1})],
    "clip_by_value_grad": [Example(_inputs(_normal(5, 7), _normal(5, 7)), {"min_value": -0.5, "max_value": 0.5})],
    "fill_like_tensor": [Example(_inputs(_normal(5, 7), _normal(1))),
                         Example(_inputs(_ints(4, 5), _normal(1)), note="int like")],
    "count_nonfinite": [Example(_with_nonfinite(5, 7)), Example(_with_nonfinite(4, 5, 6))],
    "top_k": [Example(_inputs(_normal(5, 7)), {"k": 3}), Example(_inputs(_normal(4, 5, 6)), {"k": 2})],
})


# --- building the op and replaying its signatures ----------------------------------------------------------------

# --- data ops (oneflow_compat/ops/data_ops.py) ------------------------------------------------------------------
def _uint8_images(r):
    return [r.integers(0, 256, (5, 6, 7, 3)).astype(np.uint8), r.integers(0, 2, 5).astype(np.int8)]


_CMN = {"color_space": "RGB", "crop_h": 4, "crop_w": 5, "crop_pos_y": 0.5, "crop_pos_x": 0.3,
        "mean": [1.0, 2.0, 3.0], "std": [2.0, 4.0, 8.0], "output_layout": "NCHW"}
EXAMPLES.update({
    "crop_mirror_normalize_from_uint8": [
        Example(_uint8_images, _CMN, note="crop+mirror, NCHW"),
        Example(lambda r: _uint8_images(r)[:1], dict(_CMN, crop_h=0, crop_w=0, output_layout="NHWC", mean=[0.5],
                                                     std=[255.0]), note="no crop, NHWC")],
    "coin_flip": [Example(lambda r: [], {"batch_size": 7, "probability": 0.3, "seed": 5}),
                  Example(lambda r: [], {"batch_size": 6, "probability": 0.5, "seed": None}, note="session seed")],
})
_NOT_NUMERIC = "its rows are %s, which numeric examples cannot express; covered by tests/test_data_ops.py"
SKIPPED.update({
    "ofrecord_reader": "reads part files; its S(0) pieces (each device its share of the parts) are covered by "
                       "tests/test_data_ops.py",
    "ofrecord_raw_decoder": _NOT_NUMERIC % "OFRecord messages",
    "ofrecord_bytes_decoder": _NOT_NUMERIC % "OFRecord messages",
    "ofrecord_image_decoder": _NOT_NUMERIC % "OFRecord messages",
    "ofrecord_image_decoder_random_crop": _NOT_NUMERIC % "OFRecord messages",
    "image_decode": _NOT_NUMERIC % "tensor buffers",
    "image_random_crop": _NOT_NUMERIC % "tensor buffers",
    "image_resize_to_fixed": _NOT_NUMERIC % "tensor buffers",
    "image_resize_keep_aspect_ratio": _NOT_NUMERIC % "tensor buffers",
    "crop_mirror_normalize_from_tensorbuffer": _NOT_NUMERIC % "tensor buffers",
})



def load_all_ops():
    """Imports every op module of the package, so that every op type that exists is registered."""
    import oneflow_compat.ops as ops_pkg

    for info in pkgutil.iter_modules(ops_pkg.__path__):
        importlib.import_module("oneflow_compat.ops." + info.name)


def placement_of(n):
    return Placement("cpu", [(0, i) for i in range(n)])


def build_op(op_type, inputs, attrs, n):
    """The op as a job would hold it on `n` devices: input ops for its operands, then the op itself."""
    job = Job("validate-%s" % op_type, "predict", None)
    ctx = builder.BuildContext(job, None, placement_of(n), "consistent")
    with builder.Scoped(ctx):
        blobs = []
        for i, value in enumerate(inputs):
            value = np.asarray(value)
            blobs.append(registry.apply("input", [], {"shape": value.shape, "dtype": dtypes.from_numpy(value.dtype),
                                                      "kind": "numpy", "index": i, "batch_axis": None}))
        return registry.new_op(op_type, blobs, attrs)


def _validation_session():
    """A detached session for DeviceSlot.session (random ops read its root seed and keep per-session call
    counters); never the default session. Each run gets a fresh one, so every run is a job's first call."""
    from oneflow_compat.framework.session import Session

    s = Session()
    s.root_seed = 0
    return s


def split_input(value, sbp, n, rng):
    """The n device pieces of a logical value for one SBP."""
    if sbp == S.B:
        return [value.copy() for _ in range(n)]
    if S.is_split(sbp):
        if sbp.axis >= value.ndim:
            raise ValueError("S(%d) of a %d-d input" % (sbp.axis, value.ndim))
        return [np.ascontiguousarray(value[S.local_slices(value.shape, sbp, i, n)]) for i in range(n)]
    if sbp == S.P:
        if value.dtype.kind == "f":
            scale = float(np.max(np.abs(value))) if value.size else 1.0
            addends = [(rng.standard_normal(value.shape) * scale).astype(value.dtype) for _ in range(n - 1)]
        elif value.dtype.kind in "iu":
            addends = [rng.integers(-3, 4, value.shape).astype(value.dtype) for _ in range(n - 1)]
        else:
            raise ValueError("no partial-sum addends for dtype %s" % value.dtype)
        last = value.copy()
        for a in addends:
            last -= a
        return addends + [last]
    raise ValueError("cannot split an input with sbp %r" % (sbp,))


def _tolerance(dtype, reference):
    rtol = _RTOL.get(np.dtype(dtype))
    if rtol is None:
        return 0.0, 0.0
    scale = float(np.max(np.abs(reference))) if reference.size else 1.0
    # absolute part scaled to the output: partial sums cancel, so relative error alone is meaningless near zero
    return rtol, rtol * max(scale, 1.0)


def _close(a, b, dtype):
    rtol, atol = _tolerance(dtype, b)
    if rtol == 0.0:
        return a.shape == b.shape and bool(np.array_equal(a, b))
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def _max_error(a, b):
    if a.shape != b.shape:
        return "shape %s vs %s" % (a.shape, b.shape)
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        return "max abs error %.3g (reference max %.3g)" % (
            float(np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0,
            float(np.max(np.abs(b))) if b.size else 0.0)
    return "%d of %d elements differ" % (int(np.sum(a != b)), a.size)


def run_pieces(op, pieces_per_input):
    """Runs the op's per-device function on each device's pieces; returns [device][output] arrays."""
    n = op.placement.parallel_num
    session = _validation_session()
    outs = []
    for i in range(n):
        dev = plan.DeviceSlot(op, i, np, session)
        fn = plan.device_fn(op, dev)
        args = [pieces[i] for pieces in pieces_per_input]
        before = [a.copy() for a in args]
        res = fn(*args)
        for k, (a, b) in enumerate(zip(args, before)):
            # kernels never write their inputs: on a device the same register may feed several ops
            if not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
                raise AssertionError("device %d: the kernel modified its input %d in place" % (i, k))
        if len(op.outputs) == 1:
            res = (res,)
        outs.append([np.asarray(r) for r in res])
    return outs


def assemble_output(pieces, sbp, meta, n):
    """Logical value of one output from its device pieces, or raises AssertionError saying what is wrong."""
    for i, p in enumerate(pieces):
        want = S.local_shape(meta.shape, sbp, i, n)
        if tuple(p.shape) != want:
            raise AssertionError("device %d produced shape %s, the plan expects %s for %r of %s" % (
                i, tuple(p.shape), want, sbp, meta.shape))
        if p.dtype != meta.dtype.np:
            raise AssertionError("device %d produced dtype %s, infer says %s" % (i, p.dtype, meta.dtype.np))
    if sbp == S.B:
        for i, p in enumerate(pieces[1:], 1):
            if not _close(p, pieces[0], p.dtype):
                raise AssertionError("B output differs between device 0 and device %d (%s)" % (
                    i, _max_error(p, pieces[0])))
        return pieces[0]
    if sbp == S.P or S.is_split(sbp):
        return boxing_impl.logical_from_pieces(np, pieces, sbp)
    raise AssertionError("output sbp %r cannot be assembled" % (sbp,))


def _format_sig(sig):
    ins, outs = sig
    return "(%s)->(%s)" % (", ".join(map(repr, ins)), ", ".join(map(repr, outs)))


def check_op(op_type, inputs, attrs, device_counts=(2, 3, 4), example="", seed=0):
    """Every declared signature of one op instance on each device count: a list of Check (passes and failures)."""
    inputs = [np.asarray(x) for x in inputs]
    attrs = dict(attrs or {})
    rng = np.random.default_rng(seed)
    single = build_op(op_type, inputs, attrs, 1)
    single.sbp_in, single.sbp_out = [S.B] * len(inputs), [S.B] * len(single.outputs)
    try:
        reference = run_pieces(single, [[x] for x in inputs])[0]
    except Exception as e:
        return [Check(op_type, example, "1 device", 1, False, "%s: %s" % (type(e).__name__, e))]
    for y, ref in zip(single.outputs, reference):
        if tuple(ref.shape) != y.shape or ref.dtype != y.dtype.np:
            return [Check(op_type, example, "1 device", 1, False, "kernel gives %s %s but infer says %s %s" % (
                ref.shape, ref.dtype, y.shape, y.dtype.np))]
    checks = []
    for n in device_counts:
        op = build_op(op_type, inputs, attrs, n)
        sigs = op.defn.sbp(op)
        if not sigs:
            checks.append(Check(op_type, example, "-", n, False, "no signature declared"))
        for sig in sigs:
            checks.append(_check_signature(op, sig, inputs, reference, rng, example))
    return checks


def _check_signature(op, sig, inputs, reference, rng, example):
    n = op.placement.parallel_num
    ins, outs = tuple(sig[0]), tuple(sig[1])
    label = _format_sig(sig)

    def result(ok, message=""):
        return Check(op.type, example, label, n, ok, message)

    if len(ins) != len(inputs) or len(outs) != len(op.outputs):
        return result(False, "signature has %d inputs / %d outputs, the op %d / %d" % (
            len(ins), len(outs), len(inputs), len(op.outputs)))
    op.sbp_in, op.sbp_out = list(ins), list(outs)
    try:
        pieces = [split_input(x, s, n, rng) for x, s in zip(inputs, ins)]
        per_device = run_pieces(op, pieces)
        for k, (y, s) in enumerate(zip(op.outputs, outs)):
            value = assemble_output([d[k] for d in per_device], s, y.meta, n)
            if not _close(value, reference[k], reference[k].dtype):
                return result(False, "output %d differs from 1 device: %s" % (k, _max_error(value, reference[k])))
    except AssertionError as e:
        return result(False, str(e))
    except Exception as e:  # a kernel that cannot run on its pieces is as wrong as one giving wrong numbers
        return result(False, "%s: %s" % (type(e).__name__, e))
    return result(True)


def validate_op(op_type, inputs, attrs, device_counts=(2, 3, 4)):
    """The failing signatures of one op instance (an empty list when every declared signature is right)."""
    return [c for c in check_op(op_type, inputs, attrs, device_counts) if not c.ok]


def ops_with_signatures():
    """Registered op types whose `sbp` rule declares multi-device signatures."""
    load_all_ops()
    return [t for t in registry.all_types() if callable(registry.get(t).sbp)]


def missing_examples():
    """Op types with signatures but neither an example here nor a reason to be skipped."""
    return [t for t in ops_with_signatures() if t not in EXAMPLES and t not in SKIPPED]


def check_examples(op_type, device_counts=(2, 3, 4)):
    checks = []
    for k, ex in enumerate(EXAMPLES[op_type]):
        rng = np.random.default_rng(1000 + k)
        name = "%d%s" % (k, ": " + ex.note if ex.note else "")
        try:
            inputs = ex.make(rng)
            checks.extend(check_op(op_type, inputs, ex.attrs, device_counts, example=name, seed=k))
        except Exception as e:
            checks.append(Check(op_type, name, "-", 1, False, "example does not build: %s: %s" % (
                type(e).__name__, e)))
    return checks


def validate_all(op_types=None, device_counts=(2, 3, 4)):
    """Checks for the given op types (default: every op with signatures); ops without examples give a failure."""
    types = list(op_types) if op_types else ops_with_signatures()
    checks = []
    for t in types:
        if t in EXAMPLES:
            checks.extend(check_examples(t, device_counts))
        elif t in SKIPPED:
            checks.append(Check(t, "-", "skipped", 0, True, SKIPPED[t]))
        else:
            checks.append(Check(t, "-", "-", 0, False, "no example inputs in oneflow_compat.tools.validate.EXAMPLES"))
    return checks


def format_table(checks):
    rows = [("op", "example", "signature", "devices", "result")]
    for c in checks:
        rows.append((c.op_type, c.example, c.signature, str(c.devices) if c.devices else "-",
                     ("OK" if c.ok else "FAIL") + ("  " + c.message if c.message else "")))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4] for r in rows)


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    load_all_ops()
    unknown = [t for t in args if t not in registry.all_types()]
    if unknown:
        print("unknown op type(s): %s" % ", ".join(unknown), file=sys.stderr)
        return 2
    checks = validate_all(args or None)
    print(format_table(checks))
    failed = [c for c in checks if not c.ok]
    print("\n%d checks, %d failed" % (len(checks), len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
