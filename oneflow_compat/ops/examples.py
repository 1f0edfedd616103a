"""Example instances of every op type: one table that the SBP validator (`tools/validate.py`), the numeric
gradient check (`tests/test_gradcheck_all_ops.py`) and the kernel tests read.

Data only. A row is the op's inputs, made by `make(rng) -> [arrays]` from a numpy Generator, and its attrs; the
validator runs every row on 1, 2, 3 and 4 simulated devices under each SBP signature the op declares, and the
gradient check runs the rows with `grad=True` of every op with a gradient rule (float64 inputs, central
differences, then 2 and 3 devices with the inputs split as `splits` / `layouts` say).

Shapes use sizes that 2, 3 and 4 devices do not all divide (5, 7, 6), so uneven balanced splits are exercised.
Inputs of non-smooth ops keep away from their kinks (0 for relu/abs, ties for max/min and pools, clip bounds) by
far more than the finite-difference step. An op with neither rows nor a reason in WITHOUT_EXAMPLES fails the
coverage tests, and so does a differentiable op without a gradient row: a new op comes with its rows.
"""
import numpy as np

from oneflow_compat.ir import dtypes
from oneflow_compat.kernels import nn as nn_k


class Example:
    """One instance of an op.

    make: rng -> list of input arrays; attrs: the op's attrs; note: what the row exercises (shown by the checks).
    For the gradient check: grad (False: not a gradient row; the note says why), wrt (indices of the inputs to
    differentiate; default every floating input), outputs (indices of the outputs in the loss; default every
    floating output), splits (per input, the batch axis of its placeholder on >1 devices, None = broadcast;
    default axis 0 where it has 2 rows), layouts (more `splits` to try), eps/rtol/atol (step and tolerance).
    """

    def __init__(self, make, attrs=None, note="", grad=True, wrt=None, outputs=None, splits=None, layouts=(),
                 eps=1e-6, rtol=1e-6, atol=1e-9):
        self.make = make
        self.attrs = dict(attrs or {})
        self.note = note
        self.grad = grad
        self.wrt, self.outputs, self.splits, self.layouts = wrt, outputs, splits, list(layouts)
        self.eps, self.rtol, self.atol = eps, rtol, atol

    def __repr__(self):
        return "Example(%s%s)" % (self.attrs, ", " + self.note if self.note else "")


# --- value makers: each returns rng -> array ---------------------------------------------------------------------
def normal(*shape, dtype=np.float64, scale=1.0):
    return lambda r: (r.standard_normal(shape) * scale).astype(dtype)


def positive(*shape, dtype=np.float64, low=0.5, high=2.0):
    return lambda r: r.uniform(low, high, shape).astype(dtype)


def uniform(*shape, low=0.0, high=1.0):
    return lambda r: r.uniform(low, high, shape)


def away_from_zero(*shape, dtype=np.float64):
    return lambda r: (r.uniform(0.5, 2.0, shape) * r.choice([-1.0, 1.0], shape)).astype(dtype)


def ints(*shape, low=0, high=4, dtype=np.int32):
    return lambda r: r.integers(low, high, shape).astype(dtype)


def fixed(values, dtype=np.int32):
    return lambda r: np.array(values, dtype=dtype)


def distinct(*shape):
    """Values at least 0.04 apart (no ties for max/min and pools)."""
    def make(r):
        n = int(np.prod(shape))
        return (r.permutation(n) * 0.05 - n * 0.025 + r.uniform(0, 0.01, n)).reshape(shape)
    return make


def away_from(bounds, *shape, margin=0.1):
    """Floats in (-2, 2) that keep `margin` away from each of `bounds` (the kinks of clip_by_value)."""
    def make(r):
        x = r.uniform(-2.0, 2.0, shape)
        for b in bounds:
            x = np.where(np.abs(x - b) < margin, x + 3 * margin, x)
        return x
    return make


def with_nonfinite(*shape):
    """Normal values with six of them inf, -inf or nan."""
    def make(r):
        g = r.standard_normal(shape)
        flat = g.reshape(-1)
        flat[r.choice(flat.size, 6, replace=False)] = [np.inf, -np.inf, np.nan, np.nan, np.inf, np.nan]
        return g
    return make


def distributions(*shape, axis=-1):
    """Rows of positive numbers summing to 1 along `axis` (softmax outputs, soft labels)."""
    def make(r):
        p = r.uniform(0.1, 1.0, shape)
        return p / p.sum(axis=axis, keepdims=True)
    return make


def inputs(*makers):
    return lambda r: [m(r) for m in makers]


def apart(shape_a, shape_b):
    """Two inputs whose elements differ by at least 0.1 under any broadcast (no ties for maximum/minimum)."""
    return lambda r: [r.uniform(1.1, 2.0, shape_a) * r.choice([-1.0, 1.0], shape_a), r.uniform(-1.0, 1.0, shape_b)]


# --- row families ------------------------------------------------------------------------------------------------
def unary(make=normal, **attrs):
    return [Example(inputs(make(5, 7)), attrs), Example(inputs(make(4, 5, 6)), attrs, note="3-d")]


def binary(a=normal, b=normal):
    return [Example(inputs(a(5, 7), b(5, 7)), note="same shape"),
            Example(inputs(a(4, 5, 1), b(5, 7)), note="broadcast both"),
            Example(inputs(a(6, 7), b(7)), note="rank-1 b", layouts=[[1, 0]])]


def compare(make=normal):
    return [Example(inputs(make(5, 7), make(5, 7))), Example(inputs(make(4, 5, 1), make(5, 7)), note="broadcast")]


def reduction(make=normal):
    return [Example(inputs(make(5, 7)), {"axis": [1], "keepdims": False}),
            Example(inputs(make(5, 7)), {"axis": [0], "keepdims": True}),
            Example(inputs(make(4, 5, 6)), {"axis": [0, 2], "keepdims": False}),
            Example(inputs(make(4, 5, 6)), {"axis": [0, 2], "keepdims": True}, layouts=[[1]]),
            Example(inputs(make(4, 5, 6)), {"axis": None, "keepdims": False}, note="all")]


def pair(make_dy, make_x, *shape, **attrs):
    """Gradient kernels: dy and a forward tensor of the same shape."""
    return [Example(inputs(make_dy(*shape), make_x(*shape)), attrs)]


EXAMPLES = {
    # --- elementwise (math_ops) ----------------------------------------------------------------------------------
    "add": binary(),
    "subtract": binary(),
    "multiply": binary(),
    "divide": binary(b=away_from_zero),
    "pow": binary(a=positive),
    "maximum": [Example(apart((5, 7), (5, 7)), note="same shape"),
                Example(apart((4, 5, 1), (5, 7)), note="broadcast both"),
                Example(apart((6, 7), (7,)), note="rank-1 b", layouts=[[1, 0]])],
    "minimum": [Example(apart((5, 7), (5, 7)), note="same shape"),
                Example(apart((4, 5, 1), (5, 7)), note="broadcast both"),
                Example(apart((6, 7), (7,)), note="rank-1 b", layouts=[[1, 0]])],
    "floor_mod": binary(b=away_from_zero),
    "equal": compare(ints),
    "not_equal": [Example(inputs(ints(5, 7), ints(5, 7)))],
    "less": binary(),
    "less_equal": [Example(inputs(ints(5, 7), ints(5, 7)))],
    "greater": binary(),
    "greater_equal": [Example(inputs(ints(5, 7), ints(4, 1, 7)))],
    "logical_and": [Example(inputs(ints(5, 7, high=2), ints(5, 7, high=2)))],
    "scalar_add": unary(value=1.5),
    "scalar_mul": unary(value=-1.25) + [
        Example(inputs(normal(5, 7, dtype=np.float32)), {"value": 0.1}, note="float32", grad=False)],
    "scalar_pow": unary(positive, value=2.5),
    "scalar_rsub": unary(value=3.0),
    "scalar_rdiv": unary(away_from_zero, value=2.0),
    "scalar_mod": [Example(inputs(normal(5, 7)), {"value": 0.7})],
    "negative": unary(),
    "exp": unary(),
    "log": unary(positive),
    "sqrt": unary(positive),
    "rsqrt": unary(positive),
    "square": unary(),
    "abs": unary(away_from_zero),
    "sign": unary(),
    "floor": unary(),
    "ceil": unary(),
    "round": unary(),
    "reciprocal": unary(away_from_zero),
    "sin": unary(),
    "cos": unary(),
    "log1p": unary(positive),
    "expm1": unary(),
    "logical_not": [Example(inputs(ints(5, 7, high=2)))],
    "identity": unary(),
    "cast": [Example(inputs(normal(5, 7)), {"dtype": dtypes.float64}),
             Example(inputs(normal(5, 7)), {"dtype": dtypes.float32}, note="to float32", eps=1e-2, rtol=1e-4),
             Example(inputs(ints(5, 7, low=-9, high=9)), {"dtype": dtypes.float64}, note="int -> float",
                     grad=False),
             Example(inputs(uniform(5, 7, low=-9.0, high=9.0)), {"dtype": dtypes.int32}, note="float -> int",
                     grad=False)],
    "reduce_to_shape": [Example(inputs(normal(4, 5, 6)), {"shape": (5, 1)}),
                        Example(inputs(normal(4, 5, 6)), {"shape": (4, 1, 6)}),
                        Example(inputs(normal(7, 3)), {"shape": (3,)})],
    "reduce_sum": reduction(),
    "reduce_mean": reduction(),
    "reduce_max": reduction(distinct),
    "reduce_min": reduction(distinct),
    "reduce_prod": reduction(positive),
    "reduce_any": reduction(lambda *s: ints(*s, high=2)),
    "reduce_all": reduction(lambda *s: ints(*s, low=0, high=5)),
    "argmax": [Example(inputs(normal(5, 7))), Example(inputs(normal(4, 5, 6))), Example(inputs(normal(7)))],
    "broadcast_like": [Example(inputs(normal(1, 7), normal(5, 7)), wrt=[0]),
                       Example(inputs(normal(4, 1, 6), normal(4, 5, 6)), wrt=[0]),
                       Example(inputs(normal(5, 7), normal(5, 7)), note="no broadcast", wrt=[0])],
    "matmul": [Example(inputs(normal(5, 6), normal(6, 7)), {"transpose_a": False, "transpose_b": False, "alpha": 0.5},
                       layouts=[[None, 0], [1, 0]]),
               Example(inputs(normal(6, 5), normal(6, 7)), {"transpose_a": True, "transpose_b": False},
                       layouts=[[None, 0], [1, 0]]),
               Example(inputs(normal(5, 6), normal(7, 6)), {"transpose_a": False, "transpose_b": True,
                                                            "alpha": 0.5}, layouts=[[None, 0], [1, 0]]),
               Example(inputs(normal(6, 5), normal(7, 6)), {"transpose_a": True, "transpose_b": True},
                       layouts=[[None, 0], [1, 0]]),
               Example(inputs(normal(3, 5, 6), normal(3, 6, 4)), {"transpose_a": False, "transpose_b": False},
                       note="batched"),
               Example(inputs(normal(5, 6, dtype=np.float32), normal(6, 7, dtype=np.float32)),
                       {"transpose_a": False, "transpose_b": False}, note="float32", grad=False)],
    "bias_add": [Example(inputs(normal(5, 7), normal(7)), {"axis": 1}),
                 Example(inputs(normal(4, 6, 5), normal(6)), {"axis": 1}),
                 Example(inputs(normal(5, 7), normal(7)), {"axis": -1}),
                 Example(inputs(normal(2, 3, 2, 2), normal(3)), {"axis": 1}, note="NCHW", layouts=[[1, 0]])],
    "add_n": [Example(inputs(normal(5, 7), normal(5, 7), normal(5, 7))),
              Example(inputs(normal(5, 7), normal(5, 7)))],
    "constant": [Example(lambda r: [], {"shape": (5, 3), "value": 2.5, "dtype": dtypes.float32}),
                 Example(lambda r: [], {"shape": (7,), "value": 4, "dtype": dtypes.int32})],
    # --- activations and losses (activation_ops) -------------------------------------------------------------------
    "relu": unary(away_from_zero),
    "sigmoid": unary(),
    "tanh": unary(),
    "leaky_relu": unary(away_from_zero, alpha=0.2),
    "gelu": unary(),
    "relu_grad": pair(normal, positive, 5, 7) + [Example(inputs(normal(5, 7), normal(5, 7)), note="y<=0")],
    "sigmoid_grad": pair(normal, positive, 5, 7),
    "tanh_grad": pair(normal, normal, 5, 7),
    "leaky_relu_grad": pair(normal, normal, 5, 7, alpha=0.2),
    "gelu_grad": pair(normal, normal, 5, 7),
    "softmax": [Example(inputs(normal(5, 7)), {"axis": -1}),
                Example(inputs(normal(4, 5, 6)), {"axis": 1}, layouts=[[2]])],
    "softmax_grad": [Example(inputs(normal(5, 7), distributions(5, 7)), {"axis": -1}),
                     Example(inputs(normal(4, 5, 6), distributions(4, 5, 6, axis=1)), {"axis": 1})],
    "sparse_softmax_cross_entropy": [Example(inputs(normal(6, 5), ints(6, high=5)), outputs=[0]),
                                     Example(inputs(normal(4, 3, 5), ints(4, 3, high=5)), note="2-d labels",
                                             outputs=[0])],
    "sparse_softmax_cross_entropy_grad": [Example(inputs(normal(6), distributions(6, 5), ints(6, high=5)))],
    # --- training machinery (system_ops) ---------------------------------------------------------------------------
    "fill_like": [Example(inputs(normal(5, 7)), {"value": 3.0})],
    "mul_by_scalar_tensor": [Example(inputs(normal(5, 7), normal(1)))],
    "div_by_scalar_tensor": [Example(inputs(normal(5, 7), positive(1)))],
    "reduce_sum_square": [Example(inputs(normal(5, 7))), Example(inputs(normal(4, 5, 6)))],
    "global_norm_clip_scale": [Example(inputs(positive(1, low=0.1, high=9.0)), {"clip_norm": 1.0}),
                               Example(inputs(positive(1, low=0.1, high=9.0)), {"clip_norm": 1.5,
                                                                                "formula": "max_norm"},
                                       note="OneFlow 0.9's graph formula")],
    "add_regularization": [Example(inputs(normal(5, 7), normal(5, 7)), {"l1": 0.1, "l2": 0.01})],
    "fill_like_tensor": [Example(inputs(normal(5, 7), normal(1))),
                         Example(inputs(ints(4, 5), normal(1)), note="int like")],
}


# --- convolutions and pools (nn_ops) -----------------------------------------------------------------------------
def _conv_attrs(fmt="NCHW", strides=(1, 1), pads=((1, 1), (0, 1)), dilations=(1, 1), groups=1, **extra):
    return dict({"strides": strides, "pads": pads, "dilations": dilations, "groups": groups, "data_format": fmt},
                **extra)


def _pool_attrs(fmt="NCHW", ksize=(2, 2), strides=(2, 2), pads=((0, 0), (0, 0)), ceil_mode=False):
    return {"ksize": ksize, "strides": strides, "pads": pads, "data_format": fmt, "ceil_mode": ceil_mode}


def _conv_out(x_shape, w_shape, attrs):
    return nn_k.conv2d(np, np.zeros(x_shape), np.zeros(w_shape), **attrs).shape


def _max_pool_grad_inputs(x_shape, attrs):
    def make(r):
        x = r.standard_normal(x_shape)
        y = nn_k.max_pool2d(np, x, **attrs)
        return [r.standard_normal(y.shape), x, y]
    return make


def _avg_pool_grad_inputs(x_shape, attrs):
    return lambda r: [r.standard_normal(nn_k.avg_pool2d(np, np.zeros(x_shape), **attrs).shape)]


_BIG = "large: the smaller rows check the gradient"
# (x shape, w shape, attrs, gradient row?, note, layouts): NCHW, NHWC, strided/dilated, grouped, SAME pads
_CONV_CASES = [((5, 4, 6, 6), (6, 4, 3, 3), _conv_attrs(), False, _BIG, ()),
               ((5, 6, 6, 4), (6, 3, 3, 4), _conv_attrs("NHWC"), False, "NHWC; " + _BIG, ()),
               ((5, 4, 7, 7), (3, 4, 2, 3), _conv_attrs(strides=(2, 1), dilations=(1, 2)), False,
                "strided/dilated; " + _BIG, ()),
               ((5, 4, 6, 6), (6, 2, 3, 3), _conv_attrs(groups=2), False, "groups=2; " + _BIG, ()),
               ((2, 3, 5, 5), (4, 3, 5, 5), _conv_attrs(pads=((2, 2), (2, 2))), True, "5x5 SAME",
                [[None, 0], [1, 1]]),
               ((3, 2, 6, 5), (4, 2, 3, 2), _conv_attrs(strides=(2, 1), pads=((1, 0), (0, 1)), dilations=(1, 2)),
                True, "stride/dilation/odd pads", ()),
               ((2, 4, 5, 4), (6, 2, 3, 3), _conv_attrs(pads=((1, 1), (1, 1)), groups=2), True, "groups=2",
                [[None, None], [None, 0]]),
               ((2, 5, 5, 3), (4, 3, 3, 3), _conv_attrs("NHWC", strides=(2, 2), pads=((1, 1), (1, 1))), True,
                "NHWC", [[None, 0], [3, 3]]),
               ((2, 4, 4, 3), (3, 2, 2, 3), _conv_attrs("NHWC", pads=((1, 0), (1, 0))), True, "NHWC odd SAME pads",
                ())]
# (x shape, attrs, values, gradient row?, note, layouts)
_POOL_CASES = [((5, 4, 6, 6), _pool_attrs(), normal, False, _BIG, ()),
               ((5, 6, 7, 4), _pool_attrs("NHWC", ksize=(3, 2), strides=(2, 1), pads=((1, 0), (0, 1)), ceil_mode=True),
                normal, False, "NHWC ceil_mode; " + _BIG, ()),
               ((2, 3, 4, 6), _pool_attrs(), distinct, True, "2x2/2", [[1]]),
               ((2, 3, 5, 5), _pool_attrs(ksize=(3, 3), pads=((1, 1), (1, 1))), distinct, True, "3x3/2 SAME", ()),
               ((3, 2, 5, 6), _pool_attrs(ksize=(3, 2), strides=(2, 1), pads=((1, 0), (0, 1))), distinct, True,
                "odd pads", ()),
               ((2, 5, 5, 3), _pool_attrs("NHWC", ceil_mode=True), distinct, True, "NHWC ceil_mode", [[3]])]

EXAMPLES.update({
    "conv2d": [Example(inputs(normal(*xs), normal(*ws)), a, note=note, grad=g, layouts=lay)
               for xs, ws, a, g, note, lay in _CONV_CASES],
    "conv2d_grad_input": [Example(inputs(normal(*_conv_out(xs, ws, a)), normal(*ws)), dict(a, input_shape=xs))
                          for xs, ws, a, _, _, _ in _CONV_CASES[:4]],
    "conv2d_grad_weight": [Example(inputs(normal(*_conv_out(xs, ws, a)), normal(*xs)), dict(a, weight_shape=ws))
                           for xs, ws, a, _, _, _ in _CONV_CASES[:4]],
    "max_pool2d": [Example(inputs(values(*xs)), a, note=note, grad=g, layouts=lay)
                   for xs, a, values, g, note, lay in _POOL_CASES],
    "max_pool2d_grad": [Example(_max_pool_grad_inputs(xs, a), a) for xs, a, _, _, _, _ in _POOL_CASES[:2]],
    "avg_pool2d": [Example(inputs(values(*xs)), a, note=note, grad=g, layouts=lay)
                   for xs, a, values, g, note, lay in _POOL_CASES],
    "avg_pool2d_grad": [Example(_avg_pool_grad_inputs(xs, a), dict(a, input_shape=xs))
                        for xs, a, _, _, _, _ in _POOL_CASES[:2]],
    "dropout": [Example(inputs(normal(5, 7)), {"rate": 0.3, "seed": 7}, grad=False,
                        note="random per call: its gradient has a test of its own"),
                Example(inputs(normal(4, 5, 6, dtype=np.float32)), {"rate": 0.5, "seed": None}, grad=False,
                        note="session seed")],
    "dropout_grad": [Example(inputs(normal(5, 7), ints(5, 7, high=2, dtype=np.int8)), {"rate": 0.3})],
    "softmax_cross_entropy": [Example(inputs(normal(6, 5), distributions(6, 5)), wrt=[0]),
                              Example(inputs(normal(4, 3, 5), distributions(4, 3, 5)), note="3-d", wrt=[0],
                                      layouts=[[1, 1]])],
    "softmax_cross_entropy_grad": [Example(inputs(normal(6), distributions(6, 5), distributions(6, 5)))],
    "sigmoid_cross_entropy": [Example(inputs(normal(5, 7, scale=3.0), uniform(5, 7)), wrt=[0], layouts=[[1, 1]])],
    "sigmoid_cross_entropy_grad": [Example(inputs(normal(5, 7), normal(5, 7), uniform(5, 7)))],
})


# --- array ops (shape_ops) ---------------------------------------------------------------------------------------
def _slices(*entries):
    return {"slice_tup": tuple(entries)}


_ALL = (None, None, None)

EXAMPLES.update({
    "reshape": [Example(inputs(normal(6, 4)), {"shape": (6, 2, 2)}),
                Example(inputs(normal(4, 5, 6)), {"shape": (4, -1)}),
                Example(inputs(normal(4, 5, 6)), {"shape": (20, 6)}, note="merge"),
                Example(inputs(normal(4, 5, 6)), {"shape": (4, 5, 3, 2)})],
    "reshape_like": [Example(inputs(normal(4, 6), normal(4, 2, 3)), wrt=[0]),
                     Example(inputs(normal(4, 6), normal(24)), wrt=[0])],
    "transpose": [Example(inputs(normal(4, 5, 6)), {"perm": (2, 0, 1)}, layouts=[[1], [2]]),
                  Example(inputs(normal(5, 7)), {"perm": (1, 0)})],
    "concat": [Example(inputs(normal(5, 3), normal(5, 4)), {"axis": 1}, layouts=[[None, None], [1, None]]),
               Example(inputs(normal(3, 7), normal(4, 7), normal(2, 7)), {"axis": 0}),
               Example(inputs(normal(2, 5, 3), normal(3, 5, 3), normal(1, 5, 3)), {"axis": 0, "max_dim_size": None},
                       splits=[1, 1, 1])],
    "split_like": [Example(inputs(normal(5, 7), normal(5, 3), normal(5, 4)), {"axis": 1}, wrt=[0]),
                   Example(inputs(normal(7, 5), normal(2, 5), normal(5, 5)), {"axis": 0}, wrt=[0]),
                   Example(inputs(normal(6, 5, 2), normal(2, 5, 2), normal(4, 5, 2)), {"axis": 0}, wrt=[0])],
    "slice": [Example(inputs(normal(5, 7, 4)), _slices(_ALL, (1, 6, 2), _ALL)),
              Example(inputs(normal(6, 7)), _slices((1, None, None), _ALL)),
              Example(inputs(normal(4, 5, 6)), _slices((1, 3, 1), _ALL, (-2, None, None))),
              Example(inputs(normal(5, 7)), _slices((None, None, -1), (0, 7, 1)), note="reversed axis 0"),
              Example(inputs(normal(4, 6)), _slices(_ALL, (5, 0, -2)), note="negative step"),
              Example(inputs(normal(4, 3, 5)), _slices((-3, None, 1), _ALL, (4, 0, -2)), note="negative",
                      layouts=[[1]])],
    "slice_grad": [Example(inputs(normal(5, 3, 4), normal(5, 7, 4)), _slices(_ALL, (1, 6, 2), _ALL), wrt=[0]),
                   Example(inputs(normal(2, 5, 2), normal(4, 5, 6)), _slices((1, 3, 1), _ALL, (-2, None, None)),
                           wrt=[0])],
    "expand_dims": [Example(inputs(normal(5, 7)), {"axis": 1}, layouts=[[1]]),
                    Example(inputs(normal(5, 7)), {"axis": 2}),
                    Example(inputs(normal(5, 7)), {"axis": 0})],
    "squeeze": [Example(inputs(normal(5, 1, 7)), {"axes": (1,)}, layouts=[[2]]),
                Example(inputs(normal(1, 6, 1)), {"axes": (0, 2)}),
                Example(inputs(normal(1, 1)), {"axes": (0, 1)}, note="all axes -> (1,)")],
    "flatten": [Example(inputs(normal(4, 5, 6)), {"start_dim": 1, "end_dim": 2}),
                Example(inputs(normal(4, 5, 6)), {"start_dim": 0, "end_dim": 1}),
                Example(inputs(normal(4, 5, 6)), {"start_dim": 1, "end_dim": 1}, note="nothing merged"),
                Example(inputs(normal(5, 3, 7)), {"start_dim": 0, "end_dim": 2}, note="all axes"),
                Example(inputs(normal(5, 3, 2, 3)), {"start_dim": 1, "end_dim": 2}, layouts=[[3]])],
    "gather": [Example(inputs(normal(7, 5), fixed([3, 0, 3, 1])), {"axis": 0}, note="repeated index",
                       wrt=[0], layouts=[[0, None], [None, 0], [1, 0]]),
               Example(inputs(normal(4, 7, 3), ints(2, 5, high=7)), {"axis": 1}, wrt=[0], layouts=[[1, None]]),
               Example(inputs(normal(5, 7, 2), ints(3, 2, high=9)), {"axis": 1}, note="some out of range",
                       wrt=[0]),
               Example(inputs(normal(4, 6), ints(5, high=6)), {"axis": 1}, wrt=[0], layouts=[[None, 0]])],
    "gather_grad": [Example(inputs(normal(4, 5), fixed([3, 0, 3, 1]), normal(7, 5)), {"axis": 0}, wrt=[0],
                            layouts=[[0, 0, None], [None, None, 0]]),
                    Example(inputs(normal(4, 2, 5, 3), ints(2, 5, high=7), normal(4, 7, 3)), {"axis": 1}, wrt=[0]),
                    Example(inputs(normal(5, 3, 2, 2), ints(3, 2, high=9), normal(5, 7, 2)), {"axis": 1},
                            note="some out of range", wrt=[0])],
    "batch_gather": [Example(inputs(normal(5, 7, 3), ints(5, 4, high=7)), layouts=[[2, None]]),
                     Example(inputs(normal(4, 5, 6), ints(4, 5, 2, high=6)), note="2 batch dims")],
    "batch_gather_grad": [Example(inputs(normal(5, 4, 3), ints(5, 4, high=7), normal(5, 7, 3)), wrt=[0]),
                          Example(inputs(normal(5, 4, 3), ints(5, 4, 3, high=7), normal(5, 4, 7)), wrt=[0],
                                  note="2 batch dims")],
    "one_hot": [Example(inputs(ints(5, high=6)), {"depth": 6, "on_value": 1, "off_value": 0,
                                                   "dtype": dtypes.float32, "axis": 1}),
                Example(inputs(ints(4, 5, high=3)), {"depth": 3, "on_value": 2, "off_value": -1,
                                                      "dtype": dtypes.int32, "axis": 0}),
                Example(inputs(ints(5, 3, high=6)), {"depth": 6, "on_value": 2.0, "off_value": -1.0,
                                                      "dtype": dtypes.float32, "axis": 2})],
    "pad": [Example(inputs(normal(5, 7)), {"paddings": ((0, 0), (1, 2)), "constant_value": 0}),
            Example(inputs(normal(5, 7)), {"paddings": ((2, 0), (0, 0)), "constant_value": 1.5}, layouts=[[None]]),
            Example(inputs(normal(5, 3, 7)), {"paddings": ((1, 0), (0, 0), (0, 0)), "constant_value": 1.5}),
            Example(inputs(normal(3, 4)), {"paddings": ((1, 0), (2, 1)), "constant_value": 0.5})],
    "pad_grad": [Example(inputs(normal(5, 10)), {"paddings": ((0, 0), (1, 2))}),
                 Example(inputs(normal(6, 3, 7)), {"paddings": ((1, 0), (0, 0), (0, 0))}, layouts=[[1]]),
                 Example(inputs(normal(4, 7)), {"paddings": ((1, 0), (2, 1))})],
    "where": [Example(inputs(ints(5, 7, high=2, dtype=np.int8), normal(5, 7), normal(5, 7))),
              Example(inputs(ints(5, 1, high=2, dtype=np.int8), normal(5, 7), normal(7)), note="broadcast"),
              Example(inputs(ints(5, 1, high=2), normal(7), normal(4, 5, 7)), note="broadcast, int32 condition",
                      splits=[None, None, 1])],
    "clip_by_value": [Example(inputs(away_from((-0.5, 0.5), 5, 7)), {"min_value": -0.5, "max_value": 0.5}),
                      Example(inputs(away_from((0.1,), 5, 7)), {"min_value": None, "max_value": 0.1},
                              note="max only"),
                      Example(inputs(ints(5, 7, high=9)), {"min_value": 2, "max_value": None}, note="int, min only",
                              grad=False)],
    "clip_by_value_grad": [Example(inputs(normal(5, 7), normal(5, 7)), {"min_value": -0.5, "max_value": 0.5})],
    "count_nonfinite": [Example(inputs(with_nonfinite(5, 7))), Example(inputs(with_nonfinite(4, 5, 6)))],
    "top_k": [Example(inputs(normal(5, 7)), {"k": 3}), Example(inputs(normal(4, 5, 6)), {"k": 2}),
              Example(inputs(normal(4, 5, 6)), {"k": 9, "sorted": True}, note="k > size")],
})


# --- data ops (data_ops) -----------------------------------------------------------------------------------------
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


# Ops with SBP signatures but no rows, and why: their per-device function needs the running session (variables,
# fed inputs, schedules, collectives), or their values are not numeric arrays.
_NOT_NUMERIC = "its rows are %s, which numeric examples cannot express; covered by tests/test_data_ops.py"
WITHOUT_EXAMPLES = {
    "input": "fed from the job call (its pieces come from runtime.executor.CompiledJob.feed)",
    "variable": "its pieces are the session's variable shards",
    "optimizer_update": "updates session variables in place; covered by the training tests",
    "learning_rate": "reads the session's LR scheduler; all-broadcast by construction",
    "increment": "updates the session's step counter in place",
    "watch": "a callback on the fetched value; its SBP is whatever its input has (passthrough)",
    "boxing": "boxing is the transition itself (tests/test_boxing_transitions.py)",
    "moving_average_update": "updates session variables in place; covered by the normalization tests",
    "loss_scale_update": "updates the dynamic loss-scale state variables in place",
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
}


# --- fused ops (passes/fusion.py): the chains they replace, one row per case -------------------------------------
EXAMPLES.update({
    "conv2d_bias_act": [
        Example(inputs(normal(2, 3, 5, 5), normal(4, 3, 5, 5), normal(4)),
                _conv_attrs(pads=((2, 2), (2, 2)), activation="relu"), note="5x5 SAME + bias + relu"),
        Example(inputs(normal(2, 4, 5, 4), normal(6, 2, 3, 3), normal(6)),
                _conv_attrs(pads=((1, 1), (1, 1)), groups=2, activation=None), note="groups=2, bias only"),
        Example(inputs(normal(2, 5, 5, 3), normal(4, 3, 3, 3), normal(4)),
                _conv_attrs("NHWC", strides=(2, 2), pads=((1, 1), (1, 1)), activation="relu"), note="NHWC")],
    "matmul_bias_act": [
        Example(inputs(normal(5, 6), normal(7, 6), normal(7)),
                {"transpose_a": False, "transpose_b": True, "alpha": 1.0, "activation": "relu"},
                note="dense layer + relu"),
        Example(inputs(normal(6, 5), normal(6, 7), normal(7)),
                {"transpose_a": True, "transpose_b": False, "alpha": 0.5, "activation": None}, note="bias only")],
    "max_pool2d_relu_grad": [Example(_max_pool_grad_inputs(xs, a), a, note="x of both signs")
                             for xs, a, _, _, _, _ in _POOL_CASES[:3]],
})


def _relu_output(*shape):
    """What relu gives: zeros and positives (the mask of relu_grad)."""
    return lambda r: np.maximum(r.standard_normal(shape), 0.0)


EXAMPLES.update({
    "matmul_relu_grad": [
        Example(inputs(normal(5, 3), normal(3, 7), _relu_output(5, 7)),
                {"transpose_a": False, "transpose_b": False, "alpha": 1.0}, note="dy @ w, masked"),
        Example(inputs(normal(3, 5), normal(7, 3), _relu_output(5, 7)),
                {"transpose_a": True, "transpose_b": True, "alpha": 0.5}, note="both transposed, alpha")],
})
EXAMPLES.update({
    "sparse_softmax_cross_entropy_and_grad": [
        Example(inputs(normal(6, 5), ints(6, high=5)), {"seed": 1.0}, note="seed 1"),
        Example(inputs(normal(3, 4, 5), ints(3, 4, high=5)), {"seed": 0.25}, note="3-d, seed 0.25")],
})
WITHOUT_EXAMPLES.update({
    "matmul_sgd_update": "updates session variables in place; covered by tests/test_fusion_dense.py",
    "reduce_sum_sgd_update": "updates session variables in place; covered by tests/test_fusion_dense.py",
})


# --- math unary / binary elementwise (elementwise_math_ops; legacy issue 20) -----------------------------------
def _within(low, high):
    return lambda *shape: (lambda r: r.uniform(low, high, shape))


def _lgamma_inputs(*shape):
    """Positive values and negative ones kept 0.2 away from the poles 0, -1, -2, …"""
    def make(r):
        x = r.uniform(0.2, 4.0, shape)
        neg = r.random(shape) < 0.3
        return np.where(neg, -r.integers(0, 3, shape) - r.uniform(0.2, 0.8, shape), x)
    return make


def _with_zeros(*shape):
    def make(r):
        x = r.uniform(0.5, 2.0, shape) * r.choice([-1.0, 1.0], shape)
        x.reshape(-1)[:: 3] = 0.0
        return x
    return make


_UNARY_MATH_DOMAINS = {"acos": _within(-0.9, 0.9), "asin": _within(-0.9, 0.9), "atanh": _within(-0.9, 0.9),
                       "acosh": _within(1.1, 3.0), "asinh": normal, "atan": normal, "cosh": normal,
                       "sinh": normal, "tan": _within(-1.2, 1.2), "erf": normal, "erfc": normal,
                       "lgamma": _lgamma_inputs, "reciprocal_no_nan": away_from_zero, "rint": normal}
for _op, _make in _UNARY_MATH_DOMAINS.items():
    EXAMPLES[_op] = unary(_make)
    if _op != "rint":
        EXAMPLES[_op + "_grad"] = pair(normal, _make, 5, 7) + pair(normal, _make, 4, 5, 6)
EXAMPLES["reciprocal_no_nan"] = EXAMPLES["reciprocal_no_nan"] + [
    Example(inputs(_with_zeros(5, 7)), note="zeros give 0", grad=False)]
EXAMPLES["reciprocal_no_nan_grad"] = EXAMPLES["reciprocal_no_nan_grad"] + [
    Example(inputs(normal(5, 7), _with_zeros(5, 7)), note="zeros give 0")]
EXAMPLES["rint"] = [Example(inputs(fixed([[0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6]], dtype=np.float64)),
                            note="halves to even")] + EXAMPLES["rint"]


def _same_shape_pair(a, b, *shape):
    return [Example(inputs(a(*shape), b(*shape))), Example(inputs(a(4, 5, 6), b(4, 5, 6)), note="3-d")]


def _zero_x_and_some_zero_y(r):
    x = np.where(r.random((5, 7)) < 0.4, 0.0, r.uniform(0.5, 2.0, (5, 7)))
    y = np.where((x == 0) & (r.random((5, 7)) < 0.5), 0.0, r.uniform(0.5, 2.0, (5, 7)))
    return [x, y]


def _grad_triple(a, b, *shape):
    return [Example(inputs(a(*shape), b(*shape), normal(*shape)))]


EXAMPLES.update({
    "atan2": _same_shape_pair(away_from_zero, away_from_zero, 5, 7),
    "atan2_x_grad": _grad_triple(away_from_zero, away_from_zero, 5, 7),
    "atan2_y_grad": _grad_triple(away_from_zero, away_from_zero, 5, 7),
    # x / y kept away from integers (floor's jumps) by drawing y = ±1 and x in (k + 0.2, k + 0.8)
    "floordiv": [Example(lambda r: [r.integers(-4, 4, (5, 7)) + r.uniform(0.2, 0.8, (5, 7)),
                                    r.choice([-1.0, 1.0], (5, 7))]),
                 Example(inputs(normal(4, 5, 6), away_from_zero(4, 5, 6)), note="3-d", grad=False)],
    "floordiv_x_grad": _grad_triple(normal, away_from_zero, 5, 7),
    "floordiv_y_grad": _grad_triple(normal, away_from_zero, 5, 7),
    "xdivy": _same_shape_pair(away_from_zero, away_from_zero, 5, 7) + [
        Example(_zero_x_and_some_zero_y, note="x = 0 gives 0, also where y = 0", grad=False)],
    "xdivy_x_grad": _grad_triple(away_from_zero, away_from_zero, 5, 7),
    "xdivy_y_grad": _grad_triple(away_from_zero, away_from_zero, 5, 7),
    "xlogy": _same_shape_pair(away_from_zero, positive, 5, 7) + [
        Example(_zero_x_and_some_zero_y, note="x = 0 gives 0, also where y = 0", grad=False)],
    "xlogy_x_grad": _grad_triple(away_from_zero, positive, 5, 7),
    "xlogy_y_grad": _grad_triple(away_from_zero, positive, 5, 7),
})


# --- nd indexing, dim_gather, segment sums, in_top_k (nd_index_ops; legacy issue 20) -------------------------------
def _nd_indices(dense_shape, q, *batch, unique=False):
    """int32 index rows (batch..., q) into the first q axes of dense_shape (unique rows: no repeated slice)."""
    def make(r):
        n = int(np.prod(batch))
        lead = dense_shape[:q]
        if unique:
            flat = r.choice(int(np.prod(lead)), n, replace=False)
        else:
            flat = r.integers(0, int(np.prod(lead)), n)
        return np.stack(np.unravel_index(flat, lead), -1).reshape(batch + (q,)).astype(np.int32)
    return make


def _dim_index(shape, dim, n):
    return lambda r: r.integers(0, n, shape).astype(np.int64)


EXAMPLES.update({
    "gather_nd": [Example(inputs(normal(5, 7, 3), _nd_indices((5, 7, 3), 2, 4)), note="rows of pairs",
                          splits=[0, None], layouts=[[2, None], [None, 0]]),
                  Example(inputs(normal(6, 4), _nd_indices((6, 4), 1, 3, 2)), note="2 batch dims, repeated",
                          layouts=[[1, None], [None, 1]]),
                  Example(inputs(normal(4, 5), _nd_indices((4, 5), 2, 6)), note="scalars")],
    "scatter_nd": [Example(inputs(_nd_indices((5, 7, 3), 2, 4), normal(4, 3)), {"shape": (5, 7, 3)},
                           note="repeated rows add", layouts=[[None, 1]]),
                   Example(inputs(_nd_indices((6, 4), 1, 3, 2), normal(3, 2, 4)), {"shape": (6, 4)},
                           note="2 batch dims")],
    "scatter_nd_like": [Example(inputs(normal(5, 7, 3), _nd_indices((5, 7, 3), 2, 4), normal(4, 3)), wrt=[2],
                                layouts=[[2, None, 1]]),
                        Example(inputs(normal(6, 4), _nd_indices((6, 4), 1, 3, 2), normal(3, 2, 4)), wrt=[2])],
    "tensor_scatter_nd_update": [
        Example(inputs(normal(5, 7, 3), normal(4, 3), _nd_indices((5, 7, 3), 2, 4, unique=True)),
                layouts=[[2, 1, None]]),
        Example(inputs(normal(6, 4), normal(3, 2, 4), _nd_indices((6, 4), 1, 3, 2, unique=True)),
                note="2 batch dims"),
        Example(inputs(normal(6, 4), normal(5, 4), fixed([[1], [3], [1], [0], [1]])), note="repeated rows add",
                grad=False)],
    "tensor_scatter_nd_add": [
        Example(inputs(normal(5, 7, 3), normal(4, 3), _nd_indices((5, 7, 3), 2, 4)), layouts=[[2, 1, None]]),
        Example(inputs(normal(6, 4), normal(3, 2, 4), _nd_indices((6, 4), 1, 3, 2)), note="2 batch dims")],
    "dim_gather": [Example(inputs(normal(5, 7, 3), _dim_index((5, 4, 3), 1, 7)), {"dim": 1},
                           layouts=[[0, 0], [None, 1], [2, 2]]),
                   Example(inputs(normal(6, 5), _dim_index((3, 5), 0, 6)), {"dim": 0}, layouts=[[1, 1]])],
    "dim_scatter_add_like": [Example(inputs(normal(5, 4, 3), _dim_index((5, 4, 3), 1, 7), normal(5, 7, 3)),
                                     {"dim": 1}, wrt=[0])],
    "unsorted_segment_sum": [
        Example(inputs(normal(6, 5), ints(6, low=0, high=6)), {"axis": 0, "num_segments": 4},
                note="some ids beyond the segments", layouts=[[1, None], [None, None]]),
        Example(inputs(normal(4, 3, 2, 5), ints(3, 2, high=7)), {"axis": 1, "num_segments": 7},
                note="2-d ids", layouts=[[3, None], [1, 0]])],
    "unsorted_segment_sum_like": [
        Example(inputs(normal(6, 5), ints(6, high=4), normal(4, 5)), {"axis": 0}, wrt=[0],
                layouts=[[1, None, 1], [None, None, 0]]),
        Example(inputs(normal(4, 3, 2, 5), ints(3, 2, high=7), normal(4, 7, 5)), {"axis": 1}, wrt=[0])],
    "unsorted_batch_segment_sum": [
        Example(inputs(normal(5, 6, 3), ints(5, 6, high=4)), {"num_segments": 4}),
        Example(inputs(normal(4, 3, 5), ints(4, 3, 5, high=6)), {"num_segments": 6}, note="2 batch dims",
                layouts=[[1, 1]])],
    "in_top_k": [Example(inputs(ints(6, high=5), normal(6, 5, dtype=np.float32)), {"k": 2}),
                 Example(lambda r: [np.array([0, 3, 7, 1], np.int64),
                                    np.array([[1, 2, 3, 4], [4, 3, 2, 1], [1, 1, 1, 1], [np.nan, 1, 2, 3]],
                                             np.float32)], {"k": 1}, note="ties, target outside, nan")],
})
EXAMPLES.update({
    "tril": [Example(inputs(normal(5, 7)), {"diagonal": 0, "fill_value": 0}),
             Example(inputs(normal(3, 4, 5)), {"diagonal": -1, "fill_value": 0}, layouts=[[0]]),
             Example(inputs(normal(3, 5, 4)), {"diagonal": 2, "fill_value": -1.5}, note="fill -1.5"),
             Example(inputs(ints(4, 5, high=9)), {"diagonal": 1, "fill_value": 7}, note="int", grad=False)],
    "fused_scale_tril": [Example(inputs(normal(5, 7)), {"diagonal": 0, "fill_value": 0, "scale": 0.5}),
                         Example(inputs(normal(2, 4, 6)), {"diagonal": 1, "fill_value": -2.0, "scale": 3.0})],
})


# --- two-stage reductions (two_stage_reduce_ops; legacy issue 20) ---------------------------------------------------
def _device_results(shape):
    """Per-device extremes (with ties across devices) and their positive counts."""
    def make(r):
        x = r.integers(0, 3, shape).astype(np.float64)
        return [x, r.integers(1, 4, shape).astype(np.int32)]
    return make


def _stage_grad_inputs(shape, axis, keepdims):
    def make(r):
        x = r.integers(0, 3, shape).astype(np.float64)
        kept = np.max(x, axis=axis, keepdims=True)
        out_shape = kept.shape if keepdims else tuple(d for i, d in enumerate(shape) if i not in axis) or (1,)
        return [r.standard_normal(out_shape), (x == kept).astype(np.int8), r.integers(1, 4, shape).astype(np.int32)]
    return make


EXAMPLES.update({
    "reduce_max_global_stage": [Example(_device_results((4, 5)), {"axis": (0,), "keepdims": False}, grad=False,
                                        note="ties", layouts=[[1, 1]]),
                                Example(_device_results((3, 4, 2)), {"axis": (0, 2), "keepdims": True},
                                        grad=False, note="ties"),
                                Example(lambda r: [distinct(4, 5)(r), r.integers(1, 4, (4, 5)).astype(np.int32)],
                                        {"axis": (0,), "keepdims": False}, note="distinct", outputs=[0])],
    "reduce_min_global_stage": [Example(_device_results((4, 5)), {"axis": (1,), "keepdims": True}, grad=False,
                                        note="ties"),
                                Example(lambda r: [distinct(3, 4, 2)(r),
                                                   r.integers(1, 4, (3, 4, 2)).astype(np.int32)],
                                        {"axis": (0, 2), "keepdims": True}, note="distinct", outputs=[0])],
    "reduce_max_global_stage_grad": [Example(_stage_grad_inputs((4, 5), (0,), False), {"axis": (0,),
                                                                                        "keepdims": False})],
    "reduce_min_global_stage_grad": [Example(_stage_grad_inputs((3, 4, 2), (0, 2), True),
                                             {"axis": (0, 2), "keepdims": True})],
})
_TWO_STAGE = ("its logical outputs hold one entry per device along the split axis, so its 1-device and n-device "
              "results differ in shape by design; tests/test_legacy_math.py runs two_stage_reduce_max/min on 1-4 "
              "devices against numpy, forward and backward")
WITHOUT_EXAMPLES.update({t: _TWO_STAGE for t in (
    "reduce_max_device_stage", "reduce_min_device_stage", "reduce_max_device_stage_grad",
    "reduce_min_device_stage_grad")})


# --- array ops of the legacy API (legacy_array_ops; legacy issue 20) ------------------------------------------------
def _sparse(*shape):
    return lambda r: np.where(r.random(shape) < 0.4, r.standard_normal(shape), 0.0)


_S = (None, None, None)
EXAMPLES.update({
    "arg_sort": [Example(inputs(normal(5, 7)), {"direction": "ASCENDING"}),
                 Example(inputs(ints(4, 5, 6, high=4)), {"direction": "DESCENDING"}, note="ties keep their order",
                         layouts=[[1]])],
    "sort": [Example(inputs(normal(5, 7)), {"direction": "DESCENDING"}),
             Example(inputs(ints(4, 5, 6, high=4)), {"direction": "ASCENDING"}, note="int")],
    "argwhere": [Example(inputs(_sparse(5, 7)), {"dtype": dtypes.int32}),
                 Example(inputs(ints(3, 4, 2, high=2)), {"dtype": dtypes.int64}, note="3-d int condition"),
                 Example(inputs(lambda r: np.zeros((4, 3))), {"dtype": dtypes.int32}, note="nothing non-zero")],
    "sync_dynamic_resize": [Example(inputs(normal(6, 3), fixed([4])), note="first 4 rows"),
                            Example(inputs(normal(5, 2), fixed([0], dtype=np.int64)), note="empty")],
    "cast_to_static_shape": [Example(inputs(normal(5, 7))), Example(inputs(normal(4, 5, 6)), note="3-d")],
    "dynamic_reshape": [Example(inputs(normal(6, 4)), {"shape": (-1, 2)}),
                        Example(inputs(normal(4, 5, 6)), {"shape": (4, 30)}, note="batch kept")],
    "shape_elem_cnt": [Example(inputs(normal(5, 7)), {"axis": None, "dtype": dtypes.int32}),
                       Example(inputs(normal(4, 5, 6)), {"axis": (0, 2), "dtype": dtypes.float32}, note="axes 0, 2")],
    "range": [Example(lambda r: [], {"start": 0, "limit": 7, "delta": 1, "dtype": dtypes.int32}),
              Example(lambda r: [], {"start": 3, "limit": 20, "delta": 4, "dtype": dtypes.float64}, note="step 4")],
    "tuple_identity": [Example(inputs(normal(5, 7), normal(5, 3))), Example(inputs(normal(4, 5)), note="one")],
    "amp_white_identity": unary(),
    "count_not_finite": [Example(inputs(with_nonfinite(5, 7))), Example(inputs(with_nonfinite(4, 5, 6)))],
    "multi_count_not_finite": [Example(inputs(with_nonfinite(5, 7), with_nonfinite(6, 3))),
                               Example(inputs(with_nonfinite(4, 5, 6)), note="one input")],
    "broadcast_to_compatible_with": [Example(inputs(normal(1, 7), normal(5, 1)), wrt=[0]),
                                     Example(inputs(normal(5, 7), normal(4, 1, 1), normal(7)), wrt=[0],
                                             note="3 blobs")],
    "expand": [Example(inputs(normal(5, 1)), {"shape": (5, 7)}),
               Example(inputs(normal(3, 1, 4)), {"shape": (2, 3, 5, 4)}, note="new axis", layouts=[[2]])],
    "diag": [Example(inputs(normal(5)), {"diagonal": 0}, splits=[None]),
             Example(inputs(normal(4)), {"diagonal": -2}, splits=[None]),
             Example(inputs(normal(5, 7)), {"diagonal": 1}), Example(inputs(normal(6, 4)), {"diagonal": -1})],
    "diag_grad": [Example(inputs(normal(7, 7), normal(5)), {"diagonal": 2}),
                  Example(inputs(normal(4), normal(5, 7)), {"diagonal": 1})],
    "slice_update": [Example(inputs(normal(5, 7, 4), normal(5, 3, 4)), {"slice_tup": (_S, (1, 6, 2), _S)},
                             layouts=[[2, 2]]),
                     Example(inputs(normal(6, 4), normal(2, 4)), {"slice_tup": ((4, 0, -2), _S)}, note="negative step",
                             layouts=[[1, 1]])],
    "logical_slice": [Example(inputs(normal(7, 6)), {"start": (1, 0), "stop": (6, 5), "step": (2, 1)},
                              layouts=[[1]]),
                      Example(inputs(normal(4, 5, 6)), {"start": (0, 1, 2), "stop": (4, 4, 6), "step": (1, 2, 3)})],
})
WITHOUT_EXAMPLES.update({
    "assign": "writes a session variable in place; covered by tests/test_legacy_array.py",
    "assign_if": "writes a session variable in place; covered by tests/test_legacy_array.py",
    "assign_if_not": "writes a session variable in place; covered by tests/test_legacy_array.py",
    "logical_slice_assign": "writes a session variable in place; covered by tests/test_legacy_array.py",
})


# --- random ops (random_ops; legacy issue 20) ------------------------------------------------------------------------
EXAMPLES.update({
    "bernoulli": [Example(inputs(uniform(5, 7)), {"dtype": dtypes.float32, "seed": 3}),
                  Example(inputs(uniform(4, 5, 6)), {"dtype": dtypes.int8, "seed": None}, note="session seed, int8")],
    "generate_random_batch_permutation_indices": [Example(inputs(normal(7, 3)), {"seed": 11}),
                                                  Example(inputs(normal(5)), {"seed": None}, note="session seed")],
})


# --- experimental ops (experimental_ops; legacy issue 20) ------------------------------------------------------------
EXAMPLES.update({
    "unique_with_counts": [Example(inputs(ints(9, high=5)), {"out_idx": dtypes.int32}),
                           Example(inputs(fixed([3.5, -1.0, 3.5, 2.0, -1.0], dtype=np.float64)),
                                   {"out_idx": dtypes.int64}, note="floats, int64 idx")],
    "indexed_slices_reduce_sum": [Example(inputs(ints(6, high=4), normal(6, 3))),
                                  Example(inputs(ints(2, 3, high=3, dtype=np.int64), normal(2, 3, 2, 2)),
                                          note="2-d indices")],
    "square_sum": [Example(inputs(normal(5, 7))), Example(inputs(normal(4, 5, 6)), note="3-d")],
    "multi_square_sum": [Example(inputs(normal(5, 7), normal(6, 3))), Example(inputs(normal(4, 5)), note="one")],
})
WITHOUT_EXAMPLES.update({
    "ssp_variable_proxy": "reads a session variable through a ring buffer kept across calls; covered by "
                          "tests/test_legacy_experimental.py",
})
def _binary_chunks(r):
    from oneflow_compat.kernels import binary_blob

    return list(binary_blob.dynamic_binary_split(np, r.integers(-9, 9, (5, 3)).astype(np.int32),
                                                 capacities=(256, 128, 64, 32, 16, 16)))


# byte chunks: integer blobs, so that the kernel tests' float32 variant of a row does not change its bytes
EXAMPLES.update({
    "dynamic_binary_split": [Example(inputs(ints(5, 3, low=-9, high=9)), {"base_shift": 4, "out_num": 6}),
                             Example(inputs(ints(7, high=9, dtype=np.int8)), {"base_shift": 3, "out_num": 5},
                                     note="int8")],
    "dynamic_binary_concat": [Example(_binary_chunks, {"shape": (5, 3), "dtype": dtypes.int32, "is_dynamic": True})],
})


# --- quantization (quantization_ops; legacy issue 20) ----------------------------------------------------------------
def _quantization_inputs(shape, per_channel, scheme):
    def make(r):
        from oneflow_compat.kernels import quantization as q

        x = r.standard_normal(shape)
        scale, zero = q.min_max_observer(np, x, quantization_bit=8, quantization_scheme=scheme,
                                         per_layer_quantization=not per_channel)
        return [x, scale, zero]
    return make


_Q8 = {"quantization_bit": 8, "quantization_scheme": "symmetric"}
EXAMPLES.update({
    "min_max_observer": [Example(inputs(normal(5, 7)), dict(_Q8, per_layer_quantization=True)),
                         Example(inputs(normal(4, 3, 2)), {"quantization_bit": 4, "quantization_scheme": "affine",
                                                           "per_layer_quantization": False}, note="affine per channel")],
    "fake_quantization": [Example(_quantization_inputs((5, 7), False, "symmetric"), _Q8, wrt=[0], grad=False,
                                  note="rounding steps: the gradient (identity) is checked in "
                                       "tests/test_legacy_quantization.py", layouts=[[1, None, None]]),
                          Example(_quantization_inputs((4, 3, 2), True, "affine"),
                                  {"quantization_bit": 4, "quantization_scheme": "affine"}, grad=False,
                                  note="affine per channel")],
    "moving_average_min_max_observer_scale": [
        Example(lambda r: [r.uniform(0.5, 2.0, (1,)), r.uniform(-2.0, -0.5, (1,))], _Q8),
        Example(lambda r: [r.uniform(0.5, 2.0, (1,)), r.uniform(-2.0, -0.5, (1,))],
                {"quantization_bit": 6, "quantization_scheme": "affine"}, note="affine")],
})
WITHOUT_EXAMPLES.update({
    "moving_average_min_max_observer": "updates its moving_max / moving_min variables in place; covered by "
                                       "tests/test_legacy_quantization.py",
})


# --- tensor-buffer ops (tensor_buffer_ops; legacy issue 20) ----------------------------------------------------------
WITHOUT_EXAMPLES.update({t: _NOT_NUMERIC.replace("tests/test_data_ops.py", "tests/test_legacy_tensor_buffer.py")
                         % "tensor buffers" for t in (
    "image_flip", "image_normalize", "image_batch_align", "object_bbox_flip", "object_bbox_scale",
    "object_segmentation_polygon_flip", "object_segmentation_polygon_scale", "object_segmentation_polygon_to_mask",
    "tensor_buffer_to_tensor", "tensor_to_tensor_buffer", "gen_tensor_buffer", "tensor_list_to_tensor_buffer",
    "tensor_buffer_to_tensor_list", "tensor_list_split")})
WITHOUT_EXAMPLES.update({t: "writes TensorBoard event files when the job runs; covered by tests/test_legacy_summary.py"
                         for t in ("create_summary_writer", "flush_summary_writer", "summary_write_scalar",
                                   "summary_write_histogram", "summary_write_image", "summary_write_pb")})


# --- legacy data ops (legacy_data_ops; legacy issue 20) --------------------------------------------------------------
WITHOUT_EXAMPLES.update({
    "decode_random": "draws a new random batch every call (session state); covered by tests/test_legacy_data.py",
    "image_decoder_random_crop_resize": _NOT_NUMERIC.replace("test_data_ops", "test_legacy_data") % "tensor buffers",
    "ofrecord_jpeg_decoder": _NOT_NUMERIC.replace("test_data_ops", "test_legacy_data") % "OFRecord messages",
    "ofrecord_bytes_list_decoder": _NOT_NUMERIC.replace("test_data_ops", "test_legacy_data") % "OFRecord messages",
    "COCOReader": "reads a COCO annotation file and its images (session state); covered by tests/test_legacy_coco.py",
    "megatron_gpt_mmap_data_loader": "reads a Megatron indexed dataset, the next batch every call (session state); "
                                     "covered by tests/test_legacy_megatron.py",
})
EXAMPLES.update({
    "norm_by_channel": [Example(inputs(normal(4, 3, 5, 3)), {"mean": [1.0, 2.0, 3.0], "std": [2.0, 4.0, 8.0],
                                                            "data_format": "channels_last"}),
                        Example(inputs(normal(4, 3, 5, 2)), {"mean": [1.0, 2.0, 3.0], "std": [2.0, 4.0, 8.0],
                                                            "data_format": "channels_first"}, note="NCHW")],
})
WITHOUT_EXAMPLES.update({
    "CategoricalOrdinalEncode": "updates its table and size variables in place; covered by "
                                "tests/test_legacy_experimental.py",
})
WITHOUT_EXAMPLES["distributed_partial_fc_sample"] = (
    "draws a new random sample every call (session state), per shard of the classes; covered by "
    "tests/test_legacy_experimental.py on 1 and 2 devices")


# --- nn ops family: activations (ops/activation_ops.py) ------------------------------------------------------------
def spread_away_from(bounds, *shape, low=-5.0, high=5.0, margin=0.1):
    """Floats in (low, high) that keep `margin` away from each of `bounds` (the kinks of an activation)."""
    def make(r):
        x = r.uniform(low, high, shape)
        for b in bounds:
            x = np.where(np.abs(x - b) < margin, x + 3 * margin, x)
        return x
    return make


def _act_rows(bounds, **attrs):
    return [Example(inputs(spread_away_from(bounds, 5, 7)), attrs),
            Example(inputs(spread_away_from(bounds, 4, 5, 6)), attrs, note="3-d", layouts=[[1]])]


def _act_grad_rows(bounds, **attrs):
    return [Example(inputs(normal(5, 7), spread_away_from(bounds, 5, 7)), attrs)]


EXAMPLES.update({
    "hardtanh": _act_rows((-1.0, 1.0), min_val=-1.0, max_val=1.0) + [
        Example(inputs(spread_away_from((0.0, 6.0), 5, 7, low=-3.0, high=9.0)), {"min_val": 0.0, "max_val": 6.0},
                note="relu6")],
    "hardtanh_grad": [Example(inputs(normal(5, 7), spread_away_from((-1.0, 1.0), 5, 7)),
                              {"min_val": -1.0, "max_val": 1.0})],
    "elu": _act_rows((0.0,), alpha=1.0) + [Example(inputs(spread_away_from((0.0,), 5, 7)), {"alpha": 0.3},
                                                   note="alpha 0.3")],
    "elu_grad": _act_grad_rows((0.0,), alpha=0.7),
    "hardsigmoid": _act_rows((-3.0, 3.0)),
    "hardsigmoid_grad": _act_grad_rows((-3.0, 3.0)),
    "hardswish": _act_rows((-3.0, 3.0)),
    "hardswish_grad": _act_grad_rows((-3.0, 3.0)),
    "softplus": _act_rows((), beta=1.0, threshold=None) + [
        Example(inputs(spread_away_from((10.0,), 5, 7, low=-12.0, high=12.0)), {"beta": 2.0, "threshold": 20.0},
                note="beta 2, threshold 20 (0.9's nn.Softplus)")],
    "softplus_grad": _act_grad_rows((), beta=2.0, threshold=20.0),
    "log_sigmoid": _act_rows(()),
    "log_sigmoid_grad": _act_grad_rows(()),
    "silu": _act_rows(()),
    "silu_grad": _act_grad_rows(()),
    "mish": _act_rows(()),
    "mish_grad": _act_grad_rows(()),
    "fast_gelu": _act_rows(()),
    "fast_gelu_grad": _act_grad_rows(()),
    "prelu": [Example(inputs(spread_away_from((0.0,), 5, 3, 4), positive(3, 4, low=0.1, high=0.5)),
                      note="alpha per element (legacy flow.layers.prelu)", layouts=[[1, None], [2, None]]),
              Example(inputs(spread_away_from((0.0,), 4, 6, 3, 5), positive(6, 1, 1, low=0.1, high=0.5)),
                      note="alpha per channel, shared spatial axes (0.9's nn.PReLU)", layouts=[[1, 0], [2, None]]),
              Example(inputs(spread_away_from((0.0,), 5, 7), positive(1, low=0.1, high=0.5)),
                      note="one alpha")],
    "prelu_grad": [Example(inputs(normal(5, 3, 4), spread_away_from((0.0,), 5, 3, 4), positive(3, 4)), wrt=[0]),
                   Example(inputs(normal(4, 6, 3, 5), spread_away_from((0.0,), 4, 6, 3, 5), positive(6, 1, 1)),
                           wrt=[0])],
})


# --- nn ops family: other ops (ops/nn_misc_ops.py) ---------------------------------------------------------------
EXAMPLES.update({
    "l2_normalize": [Example(inputs(normal(5, 7)), {"axis": 1, "epsilon": 1e-12}, outputs=[0]),
                     Example(inputs(normal(4, 5, 6)), {"axis": 0, "epsilon": 1e-12}, outputs=[0], layouts=[[2]]),
                     Example(inputs(normal(5, 3, scale=0.01)), {"axis": 1, "epsilon": 0.01}, outputs=[0],
                             note="clamped by epsilon")],
    "l2_normalize_grad": [Example(lambda r: _l2_grad_inputs(r, (5, 7), 1, 1e-12), {"axis": 1, "epsilon": 1e-12}),
                          Example(lambda r: _l2_grad_inputs(r, (4, 5, 6), 2, 1e-12), {"axis": 2, "epsilon": 1e-12})],
})


def _l2_grad_inputs(r, shape, axis, eps):
    from oneflow_compat.kernels import norm as norm_k

    y, ss = norm_k.l2_normalize(np, r.standard_normal(shape), axis=axis, epsilon=eps)
    return [r.standard_normal(shape), y, ss]


# --- nn ops family: losses (ops/loss_ops.py) ------------------------------------------------------------------------
def _apart_by(beta, *shape):
    """(prediction, label) whose differences keep 0.1 away from ±beta (the kink of smooth L1) and from 0."""
    def make(r):
        d = spread_away_from((-beta, 0.0, beta), *shape, low=-3.0, high=3.0)(r)
        label = r.standard_normal(shape)
        return [label + d, label]
    return make


def _cosines(*shape):
    return lambda r: r.uniform(-0.9, 0.9, shape)


def _cml_grad_inputs(n, c, attrs):
    def make(r):
        from oneflow_compat.kernels import loss as loss_k

        x, labels = r.uniform(-0.9, 0.9, (n, c)), r.integers(0, c, n).astype(np.int32)
        _, theta = loss_k.combined_margin_loss(np, x, labels, **attrs)
        return [r.standard_normal((n, c)), labels, theta]
    return make


_CML = {"m1": 1.0, "m2": 0.5, "m3": 0.1, "depth": 7}
EXAMPLES.update({
    "smooth_l1_loss": [Example(_apart_by(1.0, 5, 7), {"beta": 1.0}),
                       Example(_apart_by(0.5, 4, 5, 6), {"beta": 0.5}, note="3-d", layouts=[[2, 2]])],
    "smooth_l1_loss_grad": [Example(lambda r: [r.standard_normal((5, 7))] + _apart_by(1.0, 5, 7)(r),
                                    {"beta": 1.0})],
    "sparse_cross_entropy": [Example(inputs(distributions(6, 7), ints(6, high=7)), {"depth": 7}, wrt=[0],
                                     layouts=[[1, None]]),
                             Example(inputs(distributions(4, 3, 5), ints(4, 3, high=5)), {"depth": 5}, wrt=[0],
                                     note="3-d")],
    "sparse_cross_entropy_grad": [Example(inputs(distributions(6, 7), ints(6, high=7), normal(6)), {"depth": 7})],
    "combined_margin_loss": [Example(inputs(_cosines(6, 7), ints(6, high=7)), _CML, wrt=[0], outputs=[0],
                                     layouts=[[1, None]]),
                             Example(inputs(_cosines(5, 4), ints(5, high=4)), dict(_CML, m1=1.2, m2=0.0, m3=0.3,
                                                                                   depth=4),
                                     wrt=[0], outputs=[0], note="sphereface-like m1")],
    "combined_margin_loss_grad": [Example(_cml_grad_inputs(6, 7, _CML), {"m1": 1.0, "m2": 0.5, "depth": 7})],
    "reduce_max_chunks": [Example(inputs(distinct(5, 7)), {"chunks": 2}, note="2 chunks"),
                          Example(inputs(distinct(4, 3, 8)), {"chunks": 3}, note="3 chunks"),
                          Example(inputs(distinct(3, 5)), {"chunks": 1}, note="1 chunk: the maximum")],
})


# --- nn ops family: normalization (ops/norm_ops.py) -------------------------------------------------------------------
def _norm_inputs(shape, axis, gamma=True, beta=True):
    c = shape[axis]
    makers = [normal(*shape), normal(c, scale=0.3), positive(c, low=0.5, high=1.5)]
    makers += [normal(c)] if gamma else []
    makers += [normal(c)] if beta else []
    return inputs(*makers)


def _norm_attrs(axis, center=True, scale=True, epsilon=1e-5):
    return {"axis": axis, "epsilon": epsilon, "center": center, "scale": scale}


def _ln_attrs(bna, bpa, center=True, scale=True):
    return {"begin_norm_axis": bna, "begin_params_axis": bpa, "epsilon": 1e-5, "center": center, "scale": scale}


def _ln_grad_inputs(shape, bna):
    def make(r):
        from oneflow_compat.kernels import norm as norm_k

        x = r.standard_normal(shape)
        _, mean, inv, _ = norm_k.layer_norm(np, x, begin_norm_axis=bna, begin_params_axis=bna, center=False,
                                            scale=False)
        return [r.standard_normal(shape), x, mean, inv]
    return make


EXAMPLES.update({
    "normalization": [Example(_norm_inputs((5, 4, 3), 1), _norm_attrs(1), layouts=[[1, 0, 0, 0, 0], [2] + [None] * 4]),
                      Example(_norm_inputs((4, 3, 2, 5), 3), _norm_attrs(3, epsilon=1e-3), note="channels last"),
                      Example(_norm_inputs((6, 5), 1, gamma=False, beta=False), _norm_attrs(1, False, False),
                              note="no affine"),
                      Example(_norm_inputs((5, 3, 4), 1, beta=False), _norm_attrs(1, center=False),
                              note="scale only")],
    "normalization_grad": [Example(inputs(normal(5, 4, 3), normal(5, 4, 3), normal(4), positive(4), normal(4)),
                                   {"axis": 1, "epsilon": 1e-5}),
                           Example(inputs(normal(6, 5), normal(6, 5), normal(5), positive(5)),
                                   {"axis": 1, "epsilon": 1e-5}, note="no gamma")],
    "layer_norm": [Example(inputs(normal(5, 4, 6), normal(6), normal(6)), _ln_attrs(1, -1), outputs=[0],
                           layouts=[[0, None, None]]),
                   Example(inputs(normal(4, 5, 3, 2), normal(3, 2), normal(3, 2)), _ln_attrs(2, 2), outputs=[0],
                           layouts=[[1, None, None]], note="2 normalized axes"),
                   Example(inputs(normal(6, 7)), _ln_attrs(1, 1, False, False), outputs=[0], note="no affine"),
                   Example(inputs(normal(5, 3, 4), normal(4)), _ln_attrs(-1, -1, center=False), outputs=[0],
                           note="gamma only, last axis")],
    "layer_norm_grad": [Example(_ln_grad_inputs((5, 4, 6), 1), {"begin_norm_axis": 1, "epsilon": 1e-5}),
                        Example(_ln_grad_inputs((4, 5, 3), 2), {"begin_norm_axis": 2, "epsilon": 1e-5})],
    "layer_norm_param_grad": [Example(inputs(normal(5, 4, 6), normal(5, 4, 6), normal(6)), {"begin_params_axis": 2}),
                              Example(inputs(normal(5, 4), normal(5, 4), normal(4)), {"begin_params_axis": -1})],
})


# --- nn ops family: convolutions of 1 and 3 dimensions, transposed convolutions (ops/conv_ops.py) -----------------
def _cnd(fmt, strides, pads, dilations, groups=1, **extra):
    return dict({"strides": strides, "pads": pads, "dilations": dilations, "groups": groups, "data_format": fmt},
                **extra)


def _cnd_out(x_shape, w_shape, attrs):
    from oneflow_compat.kernels import conv_nd

    return conv_nd.conv_out_shape(x_shape, w_shape, attrs["strides"], attrs["pads"], attrs["dilations"],
                                  attrs["groups"], attrs["data_format"])


# (x shape, w shape, attrs, note, layouts)
_CONV1D_CASES = [((3, 4, 9), (6, 4, 3), _cnd("NCW", (1,), ((1, 1),), (1,)), "SAME 3", [[None, 0], [1, 1]]),
                 ((2, 4, 11), (6, 2, 3), _cnd("NCW", (2,), ((2, 0),), (2,), groups=2), "strided, dilated, groups",
                  ()),
                 ((3, 9, 4), (5, 3, 4), _cnd("NWC", (1,), ((0, 1),), (1,)), "NWC odd pads", [[2, 2]])]
_CONV3D_CASES = [((2, 3, 5, 4, 4), (4, 3, 3, 2, 3), _cnd("NCDHW", (1, 2, 1), ((1, 1), (0, 1), (1, 1)), (1, 1, 1)),
                  "3x2x3", [[None, 0], [1, 1]]),
                 ((2, 4, 4, 5, 3), (4, 2, 2, 2, 2), _cnd("NCDHW", (2, 1, 1), ((0, 0), (1, 0), (0, 1)), (1, 2, 1),
                                                         groups=2), "groups, dilated", ()),
                 ((3, 4, 3, 5, 2), (3, 2, 2, 3, 2), _cnd("NDHWC", (1, 1, 2), ((1, 0), (0, 0), (1, 1)), (1, 1, 1)),
                  "NDHWC", [[4, 4]])]
EXAMPLES.update({
    "conv1d": [Example(inputs(normal(*xs), normal(*ws)), a, note=note, layouts=lay)
               for xs, ws, a, note, lay in _CONV1D_CASES],
    "conv1d_grad_input": [Example(inputs(normal(*_cnd_out(xs, ws, a)), normal(*ws)), dict(a, input_shape=xs))
                          for xs, ws, a, _, _ in _CONV1D_CASES],
    "conv1d_grad_weight": [Example(inputs(normal(*_cnd_out(xs, ws, a)), normal(*xs)), dict(a, weight_shape=ws))
                           for xs, ws, a, _, _ in _CONV1D_CASES],
    "conv3d": [Example(inputs(normal(*xs), normal(*ws)), a, note=note, layouts=lay)
               for xs, ws, a, note, lay in _CONV3D_CASES],
    "conv3d_grad_input": [Example(inputs(normal(*_cnd_out(xs, ws, a)), normal(*ws)), dict(a, input_shape=xs))
                          for xs, ws, a, _, _ in _CONV3D_CASES],
    "conv3d_grad_weight": [Example(inputs(normal(*_cnd_out(xs, ws, a)), normal(*xs)), dict(a, weight_shape=ws))
                           for xs, ws, a, _, _ in _CONV3D_CASES],
    # transposed: input shaped like the convolution's output, weight (C_in, C_out / groups, *k), output_shape the
    # convolution's input shape (output padding: a larger one the same convolution maps back to the input)
    "deconv1d": [Example(inputs(normal(3, 4, 5), normal(4, 3, 3)),
                         _cnd("NCW", (2,), ((1, 1),), (1,), output_shape=(3, 3, 10)), note="stride 2, output pad 1",
                         layouts=[[None, 1], [1, 0]]),
                 Example(inputs(normal(2, 4, 6), normal(4, 2, 3)),
                         _cnd("NCW", (1,), ((0, 0),), (2,), groups=2, output_shape=(2, 4, 10)), note="groups")],
    "deconv2d": [Example(inputs(normal(2, 4, 3, 4), normal(4, 3, 3, 3)),
                         _cnd("NCHW", (2, 2), ((1, 1), (1, 1)), (1, 1), output_shape=(2, 3, 6, 8)),
                         note="stride 2, output pad", layouts=[[None, 1], [1, 0]]),
                 Example(inputs(normal(3, 3, 4, 2), normal(2, 3, 2, 2)),
                         _cnd("NHWC", (1, 2), ((0, 1), (1, 0)), (1, 1), output_shape=(3, 4, 8, 2)),
                         note="NHWC odd pads")],
    "deconv3d": [Example(inputs(normal(2, 3, 3, 2, 3), normal(3, 2, 2, 3, 2)),
                         _cnd("NCDHW", (2, 1, 1), ((0, 0), (1, 1), (0, 1)), (1, 1, 1), output_shape=(2, 2, 6, 2, 3)),
                         note="3-d", layouts=[[None, 1]])],
})


# --- nn ops family: pooling of 1 and 3 dimensions, OneFlow 0.9's options, adaptive pooling (ops/pool_ops.py) -------
def _pnd(fmt, ksize, strides, pads, ceil_mode=False, **extra):
    return dict({"ksize": ksize, "strides": strides, "pads": pads, "data_format": fmt, "ceil_mode": ceil_mode},
                **extra)


def _pool_grad_inputs(kind, x_shape, attrs, values=distinct):
    def make(r):
        from oneflow_compat.kernels import pool_nd

        x = values(*x_shape)(r)
        drop = ("count_include_pad", "divisor_override") if kind == "max" else ("dilations",)
        kw = {k: v for k, v in attrs.items() if k not in drop}
        if kind == "max":
            y = pool_nd.max_pool(np, x, **kw)
            return [r.standard_normal(y.shape), x, y]
        return [r.standard_normal(pool_nd.avg_pool(np, x, **kw).shape)]
    return make


_POOL1D = [((2, 3, 9), _pnd("NCW", (3,), (2,), ((1, 1),)), "3/2 SAME", [[1]]),
           ((3, 8, 2), _pnd("NWC", (2,), (2,), ((0, 0),), ceil_mode=True), "NWC 2/2", [[2]]),
           ((2, 3, 10), _pnd("NCW", (3,), (2,), ((1, 1),), dilations=(2,), count_include_pad=True,
                             divisor_override=0), "0.9: dilation 2 / count_include_pad", ())]
_POOL3D = [((2, 3, 4, 5, 4), _pnd("NCDHW", (2, 2, 2), (2, 2, 2), ((0, 0), (0, 1), (0, 0))), "2x2x2/2", [[1]]),
           ((2, 4, 5, 3, 3), _pnd("NDHWC", (3, 2, 2), (2, 1, 1), ((1, 1), (0, 0), (1, 0)), ceil_mode=True),
            "NDHWC ceil_mode", ()),
           ((2, 2, 5, 4, 5), _pnd("NCDHW", (3, 2, 3), (2, 2, 2), ((1, 1), (1, 1), (1, 1)), dilations=(1, 2, 1),
                                  count_include_pad=True, divisor_override=0), "0.9 options", ())]
_POOL2D_09 = [((2, 3, 7, 6), _pnd("NCHW", (3, 2), (2, 2), ((1, 1), (1, 1)), dilations=(2, 1),
                                  count_include_pad=True, divisor_override=0), "0.9: dilation, pad counted"),
              ((2, 3, 6, 7), _pnd("NCHW", (3, 3), (2, 2), ((1, 1), (1, 1)), ceil_mode=True, dilations=(1, 1),
                                  count_include_pad=False, divisor_override=5), "0.9: ceil, divisor 5")]
EXAMPLES.update({
    "max_pool1d": [Example(inputs(distinct(*xs)), a, note=n, layouts=lay) for xs, a, n, lay in _POOL1D],
    "max_pool1d_grad": [Example(_pool_grad_inputs("max", xs, a), a, note=n) for xs, a, n, _ in _POOL1D],
    "avg_pool1d": [Example(inputs(normal(*xs)), a, note=n, layouts=lay) for xs, a, n, lay in _POOL1D],
    "avg_pool1d_grad": [Example(_pool_grad_inputs("avg", xs, a), dict(a, input_shape=xs), note=n)
                        for xs, a, n, _ in _POOL1D],
    "max_pool3d": [Example(inputs(distinct(*xs)), a, note=n, layouts=lay) for xs, a, n, lay in _POOL3D],
    "max_pool3d_grad": [Example(_pool_grad_inputs("max", xs, a), a, note=n) for xs, a, n, _ in _POOL3D],
    "avg_pool3d": [Example(inputs(normal(*xs)), a, note=n, layouts=lay) for xs, a, n, lay in _POOL3D],
    "avg_pool3d_grad": [Example(_pool_grad_inputs("avg", xs, a), dict(a, input_shape=xs), note=n)
                        for xs, a, n, _ in _POOL3D],
    "adaptive_avg_pool1d": [Example(inputs(normal(3, 4, 7)), {"output_size": (3,), "data_format": "NCW"})],
    "adaptive_avg_pool1d_grad": [Example(inputs(normal(3, 4, 3)), {"output_size": (3,), "data_format": "NCW",
                                                                   "input_shape": (3, 4, 7)})],
    "adaptive_avg_pool2d": [Example(inputs(normal(2, 3, 7, 5)), {"output_size": (3, 2), "data_format": "NCHW"},
                                    layouts=[[1]]),
                            Example(inputs(normal(2, 5, 4, 3)), {"output_size": (1, 1), "data_format": "NHWC"},
                                    note="global average, NHWC")],
    "adaptive_avg_pool2d_grad": [Example(inputs(normal(2, 3, 3, 2)), {"output_size": (3, 2), "data_format": "NCHW",
                                                                      "input_shape": (2, 3, 7, 5)})],
    "adaptive_avg_pool3d": [Example(inputs(normal(2, 3, 4, 5, 3)), {"output_size": (2, 3, 2),
                                                                    "data_format": "NCDHW"})],
    "adaptive_avg_pool3d_grad": [Example(inputs(normal(2, 3, 2, 3, 2)), {"output_size": (2, 3, 2),
                                                                         "data_format": "NCDHW",
                                                                         "input_shape": (2, 3, 4, 5, 3)})],
})
EXAMPLES["max_pool2d"] = EXAMPLES["max_pool2d"] + [Example(inputs(distinct(*xs)), a, note=n) for xs, a, n in _POOL2D_09]
EXAMPLES["max_pool2d_grad"] = EXAMPLES["max_pool2d_grad"] + [
    Example(_pool_grad_inputs("max", xs, a), a, note=n) for xs, a, n in _POOL2D_09]
EXAMPLES["avg_pool2d"] = EXAMPLES["avg_pool2d"] + [Example(inputs(normal(*xs)), a, note=n) for xs, a, n in _POOL2D_09]
EXAMPLES["avg_pool2d_grad"] = EXAMPLES["avg_pool2d_grad"] + [
    Example(_pool_grad_inputs("avg", xs, a), dict(a, input_shape=xs), note=n) for xs, a, n in _POOL2D_09]


# --- nn ops family: embedding, upsample, edge padding, random_mask_like (ops/nn_misc_ops.py) --------------------------
def _ups(output_size, mode="nearest", align_corners=False, scales=None, half_pixel=False):
    return {"output_size": output_size, "mode": mode, "align_corners": align_corners, "scales": scales,
            "half_pixel": half_pixel}


EXAMPLES.update({
    "embedding": [Example(inputs(normal(7, 4), fixed([[3, 0, 3], [6, 1, 0]], np.int64)),
                          {"padding_idx": 0, "axis": 0}, wrt=[0], note="repeated rows, padding row 0", grad=False),
                  Example(inputs(normal(7, 4), fixed([[3, 2, 3], [6, 1, 5]], np.int64)),
                          {"padding_idx": -1, "axis": 0}, wrt=[0], note="repeated rows (padding_idx's row gets no "
                          "gradient by definition: tests/test_nn_misc.py checks it against torch)",
                          layouts=[[0, None], [1, None], [None, 0]]),
                  Example(inputs(normal(5, 3), ints(6, high=5)), {"padding_idx": -1, "axis": 0}, wrt=[0])],
    "embedding_grad": [Example(inputs(normal(2, 3, 4), fixed([[3, 0, 3], [6, 1, 0]], np.int64), normal(7, 4)),
                               {"padding_idx": 3, "axis": 0}, wrt=[0])],
    "upsample": [Example(inputs(normal(2, 3, 4, 5)), _ups((8, 10)), note="nearest x2"),
                 Example(inputs(normal(2, 3, 4, 5)), _ups((8, 15), half_pixel=True, scales=(2.0, 3.0)),
                         note="legacy nearest (half pixel)", layouts=[[1]]),
                 Example(inputs(normal(2, 3, 4, 5)), _ups((7, 9), "linear"), note="bilinear"),
                 Example(inputs(normal(2, 3, 4, 5)), _ups((7, 9), "linear", align_corners=True),
                         note="bilinear, align_corners"),
                 Example(inputs(normal(2, 3, 6)), _ups((4,), "linear"), note="linear, downsampling"),
                 Example(inputs(normal(2, 2, 3, 2, 4)), _ups((6, 3, 8)), note="3-d nearest")],
    "upsample_grad": [Example(inputs(normal(2, 3, 7, 9)), dict(_ups((7, 9), "linear"), input_shape=(2, 3, 4, 5))),
                      Example(inputs(normal(2, 3, 8, 10)), dict(_ups((8, 10)), input_shape=(2, 3, 4, 5)))],
    "reflection_pad1d": [Example(inputs(normal(3, 2, 6)), {"padding": (2, 3)})],
    "reflection_pad1d_grad": [Example(inputs(normal(3, 2, 11)), {"padding": (2, 3)})],
    "reflection_pad2d": [Example(inputs(normal(2, 3, 5, 4)), {"padding": (1, 3, 2, 0)}, layouts=[[1]])],
    "reflection_pad2d_grad": [Example(inputs(normal(2, 3, 7, 8)), {"padding": (1, 3, 2, 0)})],
    "replication_pad1d": [Example(inputs(normal(3, 2, 4)), {"padding": (3, 1)})],
    "replication_pad1d_grad": [Example(inputs(normal(3, 2, 8)), {"padding": (3, 1)})],
    "replication_pad2d": [Example(inputs(normal(2, 3, 3, 4)), {"padding": (2, 1, 0, 4)})],
    "replication_pad2d_grad": [Example(inputs(normal(2, 3, 7, 7)), {"padding": (2, 1, 0, 4)})],
    "random_mask_like": [Example(inputs(normal(5, 7)), {"rate": 0.3, "seed": 11}, grad=False,
                                 note="random per call"),
                         Example(inputs(normal(4, 5, 6)), {"rate": 0.5, "seed": None}, grad=False,
                                 note="session seed")],
})


# --- model zoo (issue 24): int labels of sigmoid_cross_entropy (OneFlow v0.4.0 registers int32 / int8 labels) ---------
EXAMPLES["sigmoid_cross_entropy"] = EXAMPLES["sigmoid_cross_entropy"] + [
    Example(inputs(normal(5, 1, scale=3.0), ints(5, 1, high=2)), wrt=[0], note="int32 click labels (Wide&Deep)"),
    Example(inputs(normal(4, 3), ints(4, 3, high=2, dtype=np.int8)), wrt=[0], note="int8 labels")]
EXAMPLES["sigmoid_cross_entropy_grad"] = EXAMPLES["sigmoid_cross_entropy_grad"] + [
    Example(inputs(normal(5, 1), normal(5, 1), ints(5, 1, high=2)), note="int32 labels")]
WITHOUT_EXAMPLES.update({
    "OneRecReader": "reads OneRec files, the next batch every call (session state); covered by tests/test_onerec.py",
    "onerec_decoder": _NOT_NUMERIC.replace("test_data_ops", "test_onerec") % "OneRec examples (tensor buffers)",
})
EXAMPLES.update({
    "broadcast_matmul": [Example(inputs(normal(5, 3, 4), normal(4, 6)), {"transpose_a": False, "transpose_b": False,
                                                                         "alpha": 1.0}, layouts=[[1, None], [2, 0]]),
                         Example(inputs(normal(2, 5, 4), normal(7, 4)), {"transpose_a": False, "transpose_b": True,
                                                                         "alpha": 0.5}, note="transpose_b, alpha")],
    "broadcast_matmul_grad_b": [Example(inputs(normal(5, 3, 4), normal(5, 3, 6)), {"alpha": 1.0},
                                        layouts=[[1, 1], [2, None]])],
})
# batch normalization in training (ops/norm_ops.py's model-zoo block): the statistics' sums, the normalization whose
# gradient is that of the whole batch norm (so a numeric check of it alone, with mean and variance held fixed, does
# not apply: tests/test_zoo_kernels.py checks it against torch and the composed ops), and its two gradient passes
_BS = {"axis": 1, "epsilon": 1e-5, "center": True, "scale": True, "count": 5 * 6}
EXAMPLES.update({
    "channel_sum": [Example(inputs(normal(5, 3, 6)), {"axis": 1, "dtype": dtypes.float64}, grad=False,
                            note="no gradient rule: normalization_batch_stats carries it"),
                    Example(inputs(normal(4, 7)), {"axis": 1, "dtype": dtypes.float64}, grad=False, note="NC")],
    "centered_square_sum": [Example(inputs(normal(5, 3, 6), normal(3)), {"axis": 1}, grad=False,
                                    note="no gradient rule: normalization_batch_stats carries it")],
    "normalization_batch_stats": [Example(inputs(normal(5, 3, 6), normal(3), positive(3), positive(3), normal(3)),
                                          _BS, grad=False, note="the gradient is the whole batch norm's")],
    "normalization_batch_stats_grad_sums": [Example(inputs(normal(5, 3, 6), normal(5, 3, 6), normal(3), positive(3)),
                                                    {"axis": 1, "epsilon": 1e-5}, grad=False)],
    "normalization_batch_stats_grad": [Example(inputs(normal(5, 3, 6), normal(5, 3, 6), normal(3), positive(3),
                                                      positive(3), normal(3), normal(3)),
                                               {"axis": 1, "epsilon": 1e-5, "count": 30}, grad=False)],
})


# --- n-D meshes (issue 19): OneFlow v0.4.0's hierarchical parallel casts (ops/parallel_cast_ops.py) ------------------
def _pin(sbp):
    from oneflow_compat.ir import sbp as S

    return {"sbp": S.parse(sbp), "grad_mode": "restore", "grad_sbp": None}


EXAMPLES.update({
    "hierarchical_parallel_cast": [Example(inputs(normal(5, 7)), _pin("S(1)"), note="pinned to S(1)"),
                                   Example(inputs(normal(5, 7)), _pin("B"), note="pinned to B"),
                                   Example(inputs(normal(5, 7)), _pin("P"), note="pinned to P")],
    "hierarchical_parallel_cast_like": [Example(inputs(normal(5, 7), normal(5, 7)), wrt=[0],
                                                note="laid out as like (any layout without a producer)")],
})


# --- tensor ops of OneFlow 0.9's global API (tensor_ops; issue 21, the global helper) ---------------------------
def _rows_distinct(rows, cols, k):
    """(rows, k) int64 indices into `cols` columns, distinct within each row (scatter updates without repeats)."""
    return lambda r: np.stack([r.permutation(cols)[:k] for _ in range(rows)]).astype(np.int64)


EXAMPLES.update({
    "flip": [Example(inputs(normal(5, 7)), {"dims": (1,)}, layouts=[[0]]),
             Example(inputs(normal(4, 5, 6)), {"dims": (0, 2)}, layouts=[[1]])],
    "cumsum": [Example(inputs(normal(5, 7)), {"dim": 1}),
               Example(inputs(normal(4, 5, 6)), {"dim": 0}, layouts=[[2]])],
    "triu": [Example(inputs(normal(5, 7)), {"diagonal": 0}, splits=[None]),
             Example(inputs(normal(4, 5, 6)), {"diagonal": -1}),
             Example(inputs(normal(3, 4, 6)), {"diagonal": 2})],
    "isnan": [Example(inputs(with_nonfinite(5, 7)), grad=False, note="a flag: no gradient"),
              Example(inputs(ints(4, 5)), grad=False, note="integers have no NaN")],
    "isinf": [Example(inputs(with_nonfinite(5, 7)), grad=False, note="a flag: no gradient")],
    "dim_scatter_update": [
        Example(lambda r: [r.standard_normal((5, 7)), _rows_distinct(5, 7, 3)(r), r.standard_normal((5, 4))],
                {"dim": 1}, wrt=[0, 2], note="distinct indices per row (repeats make the written value arbitrary)"),
        Example(lambda r: [r.standard_normal((6, 5)), _rows_distinct(5, 6, 6)(r).T.copy(), r.standard_normal((6, 5))],
                {"dim": 0}, wrt=[0, 2], layouts=[[1, 1, 1]], note="dim 0, every row rewritten")],
    "dim_scatter_add": [
        Example(inputs(normal(5, 7), ints(5, 4, high=7, dtype=np.int64), normal(5, 4)), {"dim": 1}, wrt=[0, 2],
                note="repeated indices accumulate"),
        Example(inputs(normal(4, 5, 6), ints(4, 2, 6, high=5, dtype=np.int64), normal(4, 3, 6)), {"dim": 1},
                wrt=[0, 2], note="src larger than index")],
    "dim_scatter_src_grad": [
        Example(inputs(normal(5, 7), ints(5, 3, high=7, dtype=np.int64), normal(5, 4)), {"dim": 1}, wrt=[0])],
})
EXAMPLES.update({
    "erfinv": [Example(inputs(uniform(5, 7, low=-0.95, high=0.95)), eps=1e-7, rtol=1e-5),
               Example(inputs(uniform(4, 5, 6, low=-0.9, high=0.9)), rtol=1e-5)],
    "erfinv_grad": [Example(inputs(normal(5, 7), normal(5, 7)))],
})


# --- CTC loss and decoder (ops/ctc_ops.py), pools with indices and max unpooling (ops/pool_index_ops.py) -----------
def _ctc_inputs(t, n, c, s, input_lengths, target_lengths, flat=False):
    """log_softmax'd log_probs (T, N, C), targets (padded, or 1-D concatenated), and the two length vectors."""
    def make(r):
        z = r.standard_normal((t, n, c))
        lp = z - np.log(np.exp(z).sum(axis=2, keepdims=True))
        targets = r.integers(1, c, (n, s)).astype(np.int32)
        tl = np.array(target_lengths, dtype=np.int64)
        if flat:
            targets = np.concatenate([targets[b, :tl[b]] for b in range(n)]).astype(np.int64)
        return [lp, targets, np.array(input_lengths, dtype=np.int32), tl]
    return make


def _ctc_grad_inputs(make_forward, attrs):
    def make(r):
        from oneflow_compat.kernels import ctc

        lp, targets, il, tl = make_forward(r)
        loss, alpha = ctc.ctc_loss(np, lp, targets, il, tl, blank=attrs["blank"],
                                   max_target_length=attrs["max_target_length"])
        return [r.standard_normal(loss.shape), lp, targets, il, tl, loss, alpha]
    return make


_CTC = [(_ctc_inputs(6, 5, 4, 3, [6, 5, 6, 4, 3], [3, 2, 0, 3, 1]), {"blank": 0, "zero_infinity": False,
                                                                      "max_target_length": 3}, "padded targets"),
        (_ctc_inputs(5, 3, 5, 2, [5, 5, 4], [2, 1, 2], flat=True), {"blank": 4, "zero_infinity": False,
                                                                  "max_target_length": 2},
         "1-D targets, blank 4")]
# an input too short for its target: an infinite loss, whose gradient zero_infinity zeroes
_CTC_GRAD = _CTC + [(_ctc_inputs(5, 3, 4, 3, [5, 1, 4], [2, 3, 1]), {"blank": 0, "zero_infinity": True,
                                                                     "max_target_length": 3},
                     "zero_infinity, an impossible alignment")]
_CTC_NO_FD = ("OneFlow's ctc gradient is the one through log_softmax (exp(lp) - posterior), not d/d log_probs: "
              "checked through log_softmax in tests/test_ctc.py")


def _pool_index_inputs(kind, x_shape, attrs):
    def make(r):
        from oneflow_compat.kernels import pool_index

        x = distinct(*x_shape)(r)
        if kind == "adaptive":
            y, ind = pool_index.adaptive_max_pool(np, x, output_size=attrs["output_size"])
        else:
            y, ind = pool_index.max_pool_with_indices(np, x, **attrs)
        return x, y, ind
    return make


def _pool_index_grad_rows(kind, x_shape, attrs):
    def make(r):
        _, y, ind = _pool_index_inputs(kind, x_shape, attrs)(r)
        return [r.standard_normal(y.shape), ind]
    return make


def _unpool_rows(x_shape, attrs, output_size, grad_of=False):
    def make(r):
        _, y, ind = _pool_index_inputs("max", x_shape, attrs)(r)
        if grad_of:
            return [r.standard_normal(tuple(y.shape[:2]) + tuple(output_size)), ind]
        return [r.standard_normal(y.shape), ind]
    return make


def _pix(k, s, p, ceil_mode=False, dil=None):
    n = len(k)
    return {"ksize": k, "strides": s, "pads": tuple((v, v) for v in p), "ceil_mode": ceil_mode,
            "dilations": dil or (1,) * n}


_POOL_IX = {1: [((2, 3, 9), _pix((3,), (2,), (1,)), "3/2 pad 1"),
                ((3, 2, 10), _pix((2,), (3,), (0,), ceil_mode=True, dil=(2,)), "dilation 2, ceil_mode")],
            2: [((2, 3, 7, 6), _pix((3, 2), (2, 2), (1, 1)), "3x2/2 pad 1"),
                ((3, 2, 6, 7), _pix((3, 3), (2, 1), (1, 0), ceil_mode=True, dil=(1, 2)), "ceil_mode, dilation")],
            3: [((2, 2, 4, 5, 4), _pix((2, 2, 2), (2, 2, 2), (0, 1, 0)), "2x2x2/2 pad")]}
_ADAPTIVE_IX = {1: [((3, 4, 7), (3,))], 2: [((2, 3, 7, 5), (3, 2)), ((2, 3, 5, 4), (5, 6))],
                3: [((2, 3, 4, 5, 3), (2, 3, 2))]}
_UNPOOL_IX = {1: ((2, 3, 8), _pix((2,), (2,), (0,)), (8,)), 2: ((2, 3, 6, 6), _pix((2, 2), (2, 2), (0, 0)), (7, 6)),
              3: ((2, 2, 4, 4, 4), _pix((2, 2, 2), (2, 2, 2), (0, 0, 0)), (4, 4, 4))}

EXAMPLES.update({
    "ctc_loss": [Example(make, a, note=n + "; " + _CTC_NO_FD, grad=False, layouts=[[1, 0, 0, 0]])
                 for make, a, n in _CTC],
    "ctc_loss_grad": [Example(_ctc_grad_inputs(make, a), a, note=n) for make, a, n in _CTC_GRAD],
    "ctc_greedy_decoder": [
        Example(lambda r: [distinct(6, 5, 4)(r), np.array([6, 5, 6, 1, 3], dtype=np.int64)],
                {"merge_repeated": True}),
        Example(lambda r: [distinct(5, 3, 3)(r), np.array([5, 4, 0], dtype=np.int64)],
                {"merge_repeated": False}, note="repeats kept, an empty input")],
})
for _nd in (1, 2, 3):
    EXAMPLES.update({
        "max_pool_%dd" % _nd: [Example(lambda r, xs=xs: [distinct(*xs)(r)], a, note=n, layouts=[[1]])
                               for xs, a, n in _POOL_IX[_nd]],
        "max_pool_%dd_grad" % _nd: [Example(_pool_index_grad_rows("max", xs, a), dict(input_spatial=xs[2:]), note=n)
                                    for xs, a, n in _POOL_IX[_nd]],
        "adaptive_max_pool%dd" % _nd: [Example(lambda r, xs=xs: [distinct(*xs)(r)], {"output_size": o},
                                               layouts=[[1]]) for xs, o in _ADAPTIVE_IX[_nd]],
        "adaptive_max_pool%dd_grad" % _nd: [
            Example(_pool_index_grad_rows("adaptive", xs, {"output_size": o}), {"input_spatial": xs[2:]})
            for xs, o in _ADAPTIVE_IX[_nd]],
        "max_unpool_%dd" % _nd: [Example(_unpool_rows(*_UNPOOL_IX[_nd]), {"output_size": _UNPOOL_IX[_nd][2]},
                                         wrt=[0], layouts=[[1, 1]])],
        "max_unpool_%dd_grad" % _nd: [Example(_unpool_rows(*_UNPOOL_IX[_nd], grad_of=True), {})],
    })


# --- nnextra helper (issue 21): further activations, cumprod, broadcast_fmod (ops/nn_extra_ops.py) -----------------
def _with_zeros(*shape):
    """Normal values with about a fifth set to exactly 0 (cumprod's gradient at and past a zero)."""
    def make(r):
        x = r.standard_normal(shape)
        return np.where(r.uniform(size=shape) < 0.2, 0.0, x)
    return make


EXAMPLES.update({
    "celu": _act_rows((0.0,), alpha=1.0) + [Example(inputs(spread_away_from((0.0,), 5, 7)), {"alpha": 0.4},
                                                    note="alpha 0.4")],
    "celu_grad": _act_grad_rows((0.0,), alpha=0.4),
    "selu": _act_rows((0.0,)),
    "selu_grad": _act_grad_rows((0.0,)),
    "hardshrink": _act_rows((-0.5, 0.5), lambd=0.5) + [
        Example(inputs(spread_away_from((-1.5, 1.5), 5, 7)), {"lambd": 1.5}, note="lambd 1.5")],
    "hardshrink_grad": [Example(inputs(normal(5, 7), spread_away_from((-0.5, 0.5), 5, 7)), {"lambd": 0.5},
                                note="y read as the forward output: zero where |x| <= lambd", grad=False)],
    "softshrink": _act_rows((-0.5, 0.5), alpha=0.5) + [
        Example(inputs(spread_away_from((-1.5, 1.5), 5, 7)), {"alpha": 1.5}, note="lambd 1.5")],
    "softshrink_grad": [Example(inputs(normal(5, 7), spread_away_from((0.0,), 5, 7)), {"alpha": 0.5},
                                note="y read as the forward output", grad=False)],
    "softsign": _act_rows((0.0,)),
    "softsign_grad": _act_grad_rows((0.0,)),
    "threshold": _act_rows((0.3,), threshold_val=0.3, value=-2.0),
    "threshold_grad": _act_grad_rows((0.3,), threshold_val=0.3, value=-2.0),
    "quick_gelu": _act_rows(()),
    "quick_gelu_grad": _act_grad_rows(()),
    "cumprod": [Example(inputs(positive(5, 7)), {"dim": 1}),
                Example(inputs(away_from_zero(4, 5, 6)), {"dim": 0}, layouts=[[2]]),
                Example(inputs(_with_zeros(6, 8)), {"dim": 1}, note="zeros in the input")],
    "cumprod_grad": [Example(inputs(normal(5, 7), _with_zeros(5, 7)), {"dim": 1}, grad=False,
                             note="zeros in x (the first zero of a line, and past it)")],
    "broadcast_fmod": binary(b=away_from_zero),
})


def _fold_attrs(out, k, d=(1, 1), p=(0, 0), s=(1, 1)):
    return {"output_size": out, "kernel_size": k, "dilation_rate": d, "padding": p, "strides": s}


def _unfold_attrs(k, d=(1, 1), p=(0, 0), s=(1, 1)):
    return {"kernel_size": k, "dilation_rate": d, "padding": p, "strides": s}


EXAMPLES.update({  # nnextra helper: unfold / fold
    "unfold": [Example(inputs(normal(2, 3, 5, 6)), _unfold_attrs((2, 3)), layouts=[[0]]),
               Example(inputs(normal(3, 2, 7, 6)), _unfold_attrs((3, 2), (2, 1), (1, 2), (2, 3)),
                       note="dilation, padding, stride")],
    "fold": [Example(inputs(normal(2, 18, 16)), _fold_attrs((5, 6), (2, 3)), layouts=[[0]]),
             Example(inputs(normal(3, 12, 9)), _fold_attrs((7, 6), (3, 2), (2, 1), (1, 2), (2, 3)),
                     note="dilation, padding, stride (overlaps and gaps)")],
})


def _unfold_tensor_attrs(dimension, size, step):
    return {"dimension": dimension, "size": size, "step": step}


EXAMPLES.update({  # leftovers helper: unfold_tensor (Tensor.unfold) and its gradient
    "unfold_tensor": [
        Example(inputs(normal(4, 7, 3)), _unfold_tensor_attrs(1, 3, 2), layouts=[[2]], note="a split passes through"),
        Example(inputs(normal(9, 4)), _unfold_tensor_attrs(0, 4, 1), layouts=[[1]],
                note="overlapping windows (step < size)"),
        Example(inputs(normal(3, 10)), _unfold_tensor_attrs(1, 2, 3), note="gaps between windows (step > size)")],
    "unfold_tensor_grad": [
        Example(inputs(normal(4, 3, 3, 3), normal(4, 7, 3)), _unfold_tensor_attrs(1, 3, 2), wrt=[0],
                note="x is read for its shape"),
        Example(inputs(normal(6, 4, 4), normal(9, 4)), _unfold_tensor_attrs(0, 4, 1), wrt=[0], layouts=[[1, 1]],
                note="overlapping windows sum")],
})


# leftovers helper: the update of a split variable by LARS / LAMB (whole norms over the pieces)
WITHOUT_EXAMPLES.update({
    "optimizer_update_whole_norms": "updates session variables in place; covered by tests/test_split_norms.py and "
                                    "tests/test_optim_adaptive.py (2 ranks == 1 rank)",
    "eager_ccl_all_reduce": "sums over the ranks of a graph of local tensors (each rank its own job); covered by "
                            "tests/test_nn_extra.py's SyncBatchNorm-in-a-graph runs under mpiexec",
})


# --- api-data: OneFlow 0.9's quantization kernels (quantization_formula) and its `quantization` op ---------------------
_Q9 = {"quantization_bit": 8, "quantization_scheme": "symmetric", "quantization_formula": "google"}
EXAMPLES.update({
    "quantization": [
        Example(_quantization_inputs((5, 7), False, "symmetric"), _Q9, grad=False, layouts=[[1, None, None]],
                note="integer levels: no gradient"),
        Example(_quantization_inputs((4, 3, 2), True, "affine"),
                {"quantization_bit": 4, "quantization_scheme": "affine", "quantization_formula": "google"},
                grad=False, note="affine per channel")],
})


# --- api-misc1 (OneFlow 0.9's __init__ names): tensor_buffer_to_list_of_tensors_v2 ----------------------------------
WITHOUT_EXAMPLES.update({"tensor_buffer_to_list_of_tensors_v2": _NOT_NUMERIC.replace(
    "tests/test_data_ops.py", "tests/test_api_misc1.py") % "tensor buffers"})
# roi_align (ops/roi_align_ops.py): regions inside, across the border, smaller than a bin, of both images;
# sampling_ratio given and adaptive, aligned and not. The regions split across devices, the map broadcast (or both
# split along channels); gradients reach the feature map only.
_ROIS = [[0, 0.5, 1.0, 4.2, 5.1], [1, 1.3, 0.2, 6.0, 3.7], [0, 2.0, 2.0, 2.5, 2.4], [1, -1.5, -0.5, 3.0, 8.0]]
_ROI_ATTRS = {"spatial_scale": 1.0, "pooled_h": 2, "pooled_w": 3, "sampling_ratio": 2, "aligned": True}
EXAMPLES.update({
    "roi_align": [
        Example(inputs(normal(2, 3, 6, 7), fixed(_ROIS, np.float64)), _ROI_ATTRS, wrt=[0], splits=[None, 0],
                layouts=[[1, None]], note="sampling_ratio 2, aligned"),
        Example(inputs(normal(2, 2, 8, 5), fixed([[r[0]] + [2 * v for v in r[1:]] for r in _ROIS], np.float64)),
                dict(_ROI_ATTRS, spatial_scale=0.5, sampling_ratio=0, aligned=False), wrt=[0], splits=[None, 0],
                note="adaptive grid, not aligned, spatial_scale 0.5"),
    ],
    "roi_align_grad": [Example(inputs(normal(4, 3, 2, 3), normal(2, 3, 6, 7), fixed(_ROIS, np.float64)),
                               _ROI_ATTRS, grad=False, splits=[0, None, 0], note="dy of every region")],
})


# --- api-shape team (OneFlow 0.9's API reference, linalg.rst): the matrix inverse (ops/linalg_ops.py) -------------
def _invertible(*shape):
    """Well-conditioned square matrices: normal entries plus n on the diagonal."""
    def make(r):
        n = shape[-1]
        return r.standard_normal(shape) + n * np.eye(n)
    return make


EXAMPLES.update({
    "inv": [Example(inputs(_invertible(4, 4)), note="one matrix", rtol=1e-5, atol=1e-8),
            Example(inputs(_invertible(2, 3, 3)), note="a batch", layouts=[[0]], rtol=1e-5, atol=1e-8)],
})


def _sorted_rows(*shape):
    """Sorted along the last axis (ties to values drawn from the same grid)."""
    return lambda r: np.sort(r.integers(0, 12, shape).astype(np.float64) / 2, axis=-1)


def _grid_values(*shape):
    return lambda r: r.integers(-1, 14, shape).astype(np.float64) / 2


EXAMPLES.update({  # api-shape team: searchsorted (ops/linalg_ops.py), no gradient (integer indices)
    "searchsorted": [
        Example(inputs(_sorted_rows(9), _grid_values(4, 6)), {"out_int32": False, "right": False},
                note="1-D sequence, values on its grid (ties)", grad=False, splits=[None, 0], layouts=[[None, 1]]),
        Example(inputs(_sorted_rows(9), _grid_values(5)), {"out_int32": True, "right": True},
                note="1-D sequence, right side, int32", grad=False, splits=[None, 0]),
        Example(inputs(_sorted_rows(4, 3, 7), _grid_values(4, 3, 5)), {"out_int32": False, "right": True},
                note="rows of an N-D sequence", grad=False, splits=[0, 0], layouts=[[1, 1]]),
    ],
})


def _boxes(n, dtype=np.float32):
    """(x1, y1, x2, y2) boxes with x1 < x2, y1 < y2 on a small field (many overlaps)."""
    def make(r):
        xy = r.uniform(0, 10, (n, 2))
        return np.concatenate([xy, xy + r.uniform(1, 5, (n, 2))], 1).astype(dtype)
    return make


EXAMPLES.update({  # api-shape team: nms (ops/linalg_ops.py), an int8 mask, no gradient
    "nms": [Example(inputs(_boxes(30)), {"iou_threshold": 0.3, "keep_n": -1}, note="no limit", grad=False,
                    splits=[None]),
            Example(inputs(_boxes(25, np.float64)), {"iou_threshold": 0.5, "keep_n": 4}, note="keep_n 4",
                    grad=False, splits=[None])],
})


# --- api-misc2: OneFlow 0.9's raw_reader (nn.RawReader) ---------------------------------------------------------------
WITHOUT_EXAMPLES.update({
    "raw_reader": "reads raw files, the next batch every call (session state); covered by tests/test_api_misc2.py "
                  "(local, and split(0) / broadcast on 2 ranks)",
})
# --- api-gaps team: scatter(..., reduce='multiply') (ops/tensor_ops.py dim_scatter_mul) -----------------------------
EXAMPLES.update({
    "dim_scatter_mul": [
        Example(inputs(normal(5, 7), ints(5, 4, high=7, dtype=np.int64), normal(5, 4)), {"dim": 1}, wrt=[0, 2],
                note="repeated indices multiply"),
        Example(inputs(normal(4, 5, 6), ints(4, 2, 6, high=5, dtype=np.int64), normal(4, 3, 6)), {"dim": 1},
                wrt=[0, 2], note="src larger than index")],
    "dim_scatter_mul_src_grad": [
        Example(inputs(normal(5, 7), ints(5, 3, high=7, dtype=np.int64), normal(5, 7), normal(5, 4)), {"dim": 1},
                grad=False, note="a gradient: no second derivative declared")],
})
# api-gaps team: upsample's bicubic mode (OneFlow 0.9 upsample_bicubic_2d; rows appended to the family's own)
EXAMPLES["upsample"] = EXAMPLES["upsample"] + [
    Example(inputs(normal(2, 3, 4, 5)), _ups((7, 9), "cubic"), note="bicubic, half-pixel source"),
    Example(inputs(normal(2, 3, 5, 4)), _ups((3, 7), "cubic", align_corners=True), note="bicubic, align_corners",
            layouts=[[1]]),
    Example(inputs(normal(1, 2, 4, 6)), _ups((6, 9), "cubic", scales=(1.5, 1.5)), note="bicubic by scale_factor")]
EXAMPLES["upsample_grad"] = EXAMPLES["upsample_grad"] + [
    Example(inputs(normal(2, 3, 7, 9)), dict(_ups((7, 9), "cubic"), input_shape=(2, 3, 4, 5)), note="bicubic")]
# api-gaps team: embedding_renorm updates the weight in place (no outputs to compare, like moving_average_update)
WITHOUT_EXAMPLES["embedding_renorm"] = ("renormalises the weight's rows in place (no outputs); covered by "
                                        "tests/test_api_gaps.py against torch, eager, global and in nn.Graph")
# api-gaps team: embedding's scale_grad_by_freq (its gradient divides each row by its index's count: indices whole)
EXAMPLES["embedding_grad"] = EXAMPLES["embedding_grad"] + [
    Example(inputs(normal(2, 3, 4), fixed([[3, 0, 3], [6, 3, 0]], np.int64), normal(7, 4)),
            {"padding_idx": 0, "axis": 0, "scale_grad_by_freq": True}, wrt=[0], note="scale_grad_by_freq",
            splits=[None, None, 0], layouts=[[1, None, None]])]

# --- one-embedding team: flow.one_embedding's lookup and its gradient (ops/one_embedding_ops.py) ----------------------
WITHOUT_EXAMPLES.update({
    "one_embedding_fused_lookup": "reads (and inserts keys into) an embedding's key-value store named by its attrs, "
                                  "which a MultiTableEmbedding module creates; covered by tests/test_one_embedding.py",
    "one_embedding_fused_lookup_grad": "updates an embedding's key-value store with the graph's optimizer (or keeps "
                                       "the gradient for flow.one_embedding.Optimizer); covered by "
                                       "tests/test_one_embedding.py",
})


# --- limits team: gradient rows of the y-reading shrink gradients, now differentiable (ops/second_order.py): y
# away from 0 (the mask's kink), so that central differences see the rule's dy-gradient and a zero y-gradient
EXAMPLES.update({
    "hardshrink_grad": EXAMPLES["hardshrink_grad"] + [
        Example(inputs(normal(5, 7), spread_away_from((0.0,), 5, 7)), {"lambd": 0.5}, note="y away from 0")],
    "softshrink_grad": EXAMPLES["softshrink_grad"] + [
        Example(inputs(normal(5, 7), spread_away_from((0.0,), 5, 7)), {"alpha": 0.5}, note="y away from 0")],
})
EXAMPLES.update({  # limits team: uniform_like (ops/random_like_ops.py)
    "uniform_like": [Example(inputs(normal(5, 7)), {"seed": 11}, grad=False, note="random per call"),
                     Example(inputs(normal(4, 5, 6, dtype=np.float32)), {"seed": None}, grad=False,
                             note="session seed")],
})
EXAMPLES.update({  # limits team: stop_gradient (ops/detach_ops.py), Tensor.detach inside nn.Graph
    "stop_gradient": [Example(inputs(normal(5, 7)), grad=False, note="no gradient: detach")],
})
WITHOUT_EXAMPLES.update({  # limits team
    "one_embedding_graph_update": "applies a training graph's accumulated one_embedding row gradients with the "
                                  "graph's optimizer (the optimizer pass builds it for the shadow); covered by "
                                  "tests/test_limits_one_embedding.py and tests/test_one_embedding.py",
})
EXAMPLES.update({  # limits2 team: digamma / polygamma (ops/polygamma_ops.py), away from the poles 0, -1, -2, …
    "digamma": unary(_lgamma_inputs),
    "polygamma": [Example(inputs(_lgamma_inputs(5, 7)), {"n": 1}, note="trigamma"),
                  Example(inputs(_lgamma_inputs(4, 5, 6)), {"n": 2}, note="3-d, n=2"),
                  Example(inputs(_lgamma_inputs(5, 7)), {"n": 0}, note="n=0: digamma")],
})
EXAMPLES.update({  # of09 team: log2 / log10 (ops/math_ops.py), OneFlow 0.9's own unary ops
    "log2": unary(positive),
    "log10": unary(positive),
})
EXAMPLES.update({  # grad-layout team: generator_draw_like (ops/random_like_ops.py), random ops inside nn.Graph
    "generator_draw_like": [
        Example(inputs(normal(5, 7)), {"kind": "normal", "seed": 11, "draw": 0, "mean": 0.0, "std": 1.0},
                grad=False, note="the generator's normal draw"),
        Example(inputs(normal(4, 5, 6, dtype=np.float32)), {"kind": "normal", "seed": 233, "draw": 3, "mean": 1.5,
                                                           "std": 0.5}, grad=False, note="mean, std"),
        Example(inputs(normal(4, 6, dtype=np.float32)), {"kind": "uniform", "seed": 5, "draw": 1, "low": 0.0,
                                                        "high": 1.0}, grad=False, note="rand"),
        Example(inputs(normal(6, 4)), {"kind": "integers", "seed": 5, "draw": 2, "low": 2, "high": 7},
                grad=False, note="randint"),
        Example(inputs(normal(8)), {"kind": "permutation", "seed": 5, "draw": 0}, grad=False, note="randperm")],
})
