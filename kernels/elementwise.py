"""Elementwise kernels: arithmetic with numpy broadcasting, comparisons, scalar-attribute ops, unary math, casts,
selection and clipping.

Scalar attributes are converted to the array's dtype before use (`x.dtype.type(value)`), so a float32 tensor stays
float32 whatever Python number the job gave. Comparisons and logical ops return int8 0/1, the legacy framework's
boolean blobs.
"""


def _scalar(x, value):
    return x.dtype.type(value)


# --- binary, broadcasting ---------------------------------------------------------------------------------------
def add(xp, a, b):
    return a + b


def subtract(xp, a, b):
    return a - b


def multiply(xp, a, b):
    return a * b


def divide(xp, a, b):
    """a / b; for integer arrays the quotient truncated toward zero in their dtype, as C++ divides them (OneFlow's
    broadcast_div kernel on int8/int32/int64). Division by zero, undefined in C++, gives 0 there."""
    if a.dtype.kind not in "iu" or b.dtype.kind not in "iu":
        return a / b
    zero = b == 0
    safe = xp.where(zero, b.dtype.type(1), b)
    q = xp.abs(a) // xp.abs(safe)
    q = xp.where((a < 0) != (safe < 0), -q, q)
    return xp.where(zero, q.dtype.type(0), q).astype(xp.result_type(a, b), copy=False)


def maximum(xp, a, b):
    return xp.maximum(a, b)


def minimum(xp, a, b):
    return xp.minimum(a, b)


def power(xp, a, b):
    return xp.power(a, b)


def floor_mod(xp, a, b):
    """Remainder with the sign of the divisor (Python's and numpy's `%`)."""
    return xp.mod(a, b)


def equal(xp, a, b):
    return (a == b).astype(xp.int8)


def not_equal(xp, a, b):
    return (a != b).astype(xp.int8)


def less(xp, a, b):
    return (a < b).astype(xp.int8)


def less_equal(xp, a, b):
    return (a <= b).astype(xp.int8)


def greater(xp, a, b):
    return (a > b).astype(xp.int8)


def greater_equal(xp, a, b):
    return (a >= b).astype(xp.int8)


def logical_and(xp, a, b):
    return ((a != 0) & (b != 0)).astype(xp.int8)


def logical_not(xp, x):
    return (x == 0).astype(xp.int8)


def add_n(xp, *xs):
    """Sum of two or more same-shaped arrays, accumulated into the first sum's fresh buffer."""
    out = xs[0] + xs[1]
    for x in xs[2:]:
        out += x
    return out


def mul_by_scalar_tensor(xp, x, s):
    """x times a one-element tensor (e.g. a gradient times the clipping factor)."""
    return x * s


def div_by_scalar_tensor(xp, x, s):
    return x / s


def bias_add(xp, x, b, *, axis):
    """x + b, with the 1-d `b` laid along `axis` of x."""
    if axis == x.ndim - 1 or axis == -1:
        return x + b
    shape = [1] * x.ndim
    shape[axis] = b.shape[0]
    return x + b.reshape(shape)


# --- with a scalar attribute ------------------------------------------------------------------------------------
def scalar_add(xp, x, *, value):
    return x + _scalar(x, value)


def scalar_mul(xp, x, *, value):
    return x * _scalar(x, value)


def scalar_pow(xp, x, *, value):
    return x ** _scalar(x, value)


def scalar_rsub(xp, x, *, value):
    """value - x."""
    return _scalar(x, value) - x


def scalar_rdiv(xp, x, *, value):
    """value / x."""
    return _scalar(x, value) / x


def scalar_mod(xp, x, *, value):
    return xp.mod(x, _scalar(x, value))


# --- unary math -------------------------------------------------------------------------------------------------
def negative(xp, x):
    return -x


def exp(xp, x):
    return xp.exp(x)


def log(xp, x):
    return xp.log(x)


def log1p(xp, x):
    return xp.log1p(x)


def log2(xp, x):
    return xp.log2(x)


def log10(xp, x):
    return xp.log10(x)


def expm1(xp, x):
    return xp.expm1(x)


def sqrt(xp, x):
    return xp.sqrt(x)


def rsqrt(xp, x):
    return 1 / xp.sqrt(x)


def square(xp, x):
    return x * x


def reciprocal(xp, x):
    return 1 / x


def absolute(xp, x):
    return xp.abs(x)


def sign(xp, x):
    if x.dtype == bool:  # a bool's sign is itself (0.9's sign kernel over bool; numpy has no bool loop)
        return x.copy()
    return xp.sign(x)


def floor(xp, x):
    return xp.floor(x)


def ceil(xp, x):
    return xp.ceil(x)


def rint(xp, x):
    """Round half to even, as the legacy `round`."""
    return xp.rint(x)


def sin(xp, x):
    return xp.sin(x)


def cos(xp, x):
    return xp.cos(x)


def cast(xp, x, *, dtype):
    return x.astype(dtype)


# --- selection and clipping -------------------------------------------------------------------------------------
def where(xp, condition, x, y):
    """x where `condition` is non-zero, else y (broadcasting all three)."""
    return xp.where(condition != 0, x, y)


def _bound(x, value):
    return None if value is None else _scalar(x, value)


def clip_by_value(xp, x, *, min_value=None, max_value=None):
    """x limited to [min_value, max_value]; a bound of None is no bound."""
    low, high = _bound(x, min_value), _bound(x, max_value)
    out = x if low is None else xp.maximum(x, low)
    return out if high is None else xp.minimum(out, high)


def clip_by_value_grad(xp, dy, x, *, min_value=None, max_value=None):
    """dy where min_value <= x <= max_value (bounds included), else 0."""
    low, high = _bound(x, min_value), _bound(x, max_value)
    keep = xp.ones(x.shape, dtype=bool)
    if low is not None:
        keep &= x >= low
    if high is not None:
        keep &= x <= high
    return xp.where(keep, dy, xp.zeros((), dtype=dy.dtype))
