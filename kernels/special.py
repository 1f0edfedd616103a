"""Special functions numpy lacks (and the kernels must not take from scipy): erf, erfc, lgamma and digamma, on
numpy and CuPy arrays alike, in the array's floating dtype (half precision is computed in float32).

* erfc(a) for a >= 0 comes from the Chebyshev table of the GELU kernel (`activation._erfc_nonnegative`, about 1e-14
  relative); erfc(-a) = 2 - erfc(a). erf(x) = 1 - erfc(x) loses the relative precision of small |x|, so below 0.5
  erf is summed from its Taylor series 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1)) (24 terms: below 1e-17 at 0.5).
* lgamma(x) = log|Γ(x)| by Lanczos' approximation (g = 7, 9 coefficients: about 1e-15 relative in Γ) for
  x >= 0.5, and the reflection formula log(π / |sin(πx)|) - lgamma(1 - x) below; +inf at the poles 0, -1, -2, …
* digamma(x) = Γ'(x)/Γ(x), the derivative of lgamma: the recurrence ψ(x) = ψ(x + 1) - 1/x up to x >= 10, then the
  asymptotic series ln x - 1/(2x) - Σ B_2k / (2k x^2k) (error below 1e-14 there); ψ(1 - x) - π cot(πx) for x < 0.5.
* polygamma(x, n) = ψ^(n)(x): the same recurrence and asymptotic series differentiated n times, and the reflection
  formula differentiated n times (see below).
"""
import math

import numpy

from .activation import _erfc_nonnegative

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_TAYLOR_TERMS = 24
# Lanczos' coefficients for g = 7, n = 9 (the values published with the approximation)
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# B_2k / (2k) for k = 1..7: the asymptotic series of digamma
_DIGAMMA_SERIES = (1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760, 1.0 / 12)
_DIGAMMA_SHIFT = 10


def _widened(fn):
    """Runs a half-precision input in float32 and casts back (the tables and series are not meant for 11 bits)."""
    def run(xp, x, *args, **attrs):
        if x.dtype.itemsize < 4:
            return fn(xp, x.astype(xp.float32), *args, **attrs).astype(x.dtype)
        return fn(xp, x, *args, **attrs)

    run.__name__, run.__doc__ = fn.__name__, fn.__doc__
    return run


def _erf_taylor(xp, x):
    """erf(x) for |x| <= 0.5 by its Taylor series, summed from the smallest term."""
    x2 = x * x
    total = xp.zeros_like(x)
    for n in range(_TAYLOR_TERMS - 1, -1, -1):
        term = x.dtype.type((-1.0) ** n / (math.factorial(n) * (2 * n + 1)))
        total = total * x2 + term if n < _TAYLOR_TERMS - 1 else xp.full_like(x, term)
    return x * total * x.dtype.type(_TWO_OVER_SQRT_PI)


@_widened
def erfc(xp, x):
    """The complementary error function 1 - erf(x)."""
    tail = _erfc_nonnegative(xp, xp.abs(x))
    with numpy.errstate(invalid="ignore"):
        return xp.where(x < 0, x.dtype.type(2) - tail, tail)


@_widened
def erf(xp, x):
    """The error function 2/√π ∫_0^x exp(-t²) dt."""
    a = xp.abs(x)
    small = a <= 0.5
    near = _erf_taylor(xp, xp.where(small, x, x.dtype.type(0)))
    far = 1 - _erfc_nonnegative(xp, xp.where(small, x.dtype.type(1), a))
    return xp.where(small, near, xp.where(x < 0, -far, far))


def _lgamma_positive(xp, x):
    """lgamma for x >= 0.5 (Lanczos)."""
    z = x - 1
    series = xp.full_like(z, x.dtype.type(_LANCZOS[0]))
    for i, c in enumerate(_LANCZOS[1:], 1):
        series = series + x.dtype.type(c) / (z + i)
    t = z + x.dtype.type(_LANCZOS_G + 0.5)
    return x.dtype.type(_HALF_LOG_2PI) + (z + 0.5) * xp.log(t) - t + xp.log(series)


@_widened
def lgamma(xp, x):
    """log |Γ(x)|; +inf at 0 and the negative integers, NaN for NaN."""
    reflect = x < 0.5
    with numpy.errstate(divide="ignore", invalid="ignore", over="ignore"):
        right = _lgamma_positive(xp, xp.where(reflect, 1 - x, x))
        # sin(πx) through x's distance to the nearest integer: exact zeros at the poles, no loss for large |x|
        frac = x - xp.floor(x)
        sin_pi = xp.abs(xp.sin(x.dtype.type(math.pi) * xp.minimum(frac, 1 - frac)))
        left = x.dtype.type(math.log(math.pi)) - xp.log(sin_pi) - right
        return xp.where(reflect, left, right)


def _digamma_large(xp, x):
    """digamma for x >= 0.5: recurrence up past _DIGAMMA_SHIFT, then the asymptotic series."""
    shift = xp.zeros_like(x)
    for _ in range(_DIGAMMA_SHIFT):
        low = x < _DIGAMMA_SHIFT
        shift = shift - xp.where(low, 1 / x, x.dtype.type(0))
        x = xp.where(low, x + 1, x)
    inv2 = 1 / (x * x)
    series = xp.zeros_like(x)
    for c in reversed(_DIGAMMA_SERIES):
        series = (series + x.dtype.type(c)) * inv2
    return shift + xp.log(x) - 0.5 / x - series


@_widened
def digamma(xp, x):
    """ψ(x) = d lgamma(x) / dx; NaN at the poles 0, -1, -2, …"""
    reflect = x < 0.5
    with numpy.errstate(divide="ignore", invalid="ignore"):
        right = _digamma_large(xp, xp.where(reflect, 1 - x, x))
        frac = x - xp.floor(x)
        pole = frac == 0
        # π cot(πx) = π / tan(πx), read through the fractional part (tan has period π)
        cot = x.dtype.type(math.pi) / xp.tan(x.dtype.type(math.pi) * xp.where(pole, x.dtype.type(0.5), frac))
        left = xp.where(pole, x.dtype.type(numpy.nan), right - cot)
        return xp.where(reflect, left, right)


# --- polygamma: ψ^(n)(x) = d^n ψ(x) / dx^n, n >= 1 -----------------------------------------------
# For x >= 0.5: the recurrence ψ^(n)(x) = ψ^(n)(x + 1) + (-1)^(n+1) n! / x^(n+1) up past 10 + 2n, then the asymptotic
# series (-1)^(n+1) [(n-1)!/x^n + n!/(2 x^(n+1)) + Σ_k B_2k (2k+n-1)! / ((2k)! x^(2k+n))] (k = 1..7; the threshold
# grows with n, as the series' terms do). Below 0.5 the reflection formula differentiated n times:
# ψ^(n)(x) = (-1)^n ψ^(n)(1 - x) - π^(n+1) Q_n(cot πx), Q_0(c) = c, Q_(k+1)(c) = -(1 + c²) Q_k'(c) (d/dx cot πx =
# -π (1 + cot² πx)). At the poles 0, -1, -2, …: +inf for odd n (ψ^(n) tends to +inf from both sides), NaN for even.
_BERNOULLI_2K = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6)


def _cot_derivative_polynomial(n):
    """Integer coefficients (lowest power first) of Q_n: d^n/dx^n cot(πx) = π^n Q_n(cot πx)."""
    q = [0, 1]
    for _ in range(n):
        d = [k * q[k] for k in range(1, len(q))] or [0]  # Q'
        out = [0] * (len(d) + 2)
        for k, c in enumerate(d):  # -(1 + c²) Q'
            out[k] -= c
            out[k + 2] -= c
        q = out
    return q


def _cot_pi(xp, f):
    """cot(πf) for f in (0, 1), through tan of an argument within π/4 of 0: exactly 0 at f = 1/2 (1/tan(π/2) is
    6e-17 in floating point, which the n-th derivative's polynomial would multiply by up to π^(n+1) n!)."""
    t = f.dtype.type
    middle = (f >= 0.25) & (f <= 0.75)
    near = xp.where(f > 0.75, f - 1, f)  # in (-1/4, 1/4)
    return xp.where(middle, -xp.tan(t(math.pi) * (f - t(0.5))),
                    1 / xp.tan(t(math.pi) * xp.where(middle, t(0.5), near)))


def _polygamma_large(xp, n, x):
    limit = 10 + 2 * n
    t = x.dtype.type
    shift = xp.zeros_like(x)
    for _ in range(limit):
        low = x < limit
        shift = shift + xp.where(low, 1 / x ** (n + 1), t(0))
        x = xp.where(low, x + 1, x)
    inv = 1 / x
    inv2 = inv * inv
    series = xp.zeros_like(x)
    for k in range(len(_BERNOULLI_2K), 0, -1):
        coef = _BERNOULLI_2K[k - 1] * math.factorial(2 * k + n - 1) / math.factorial(2 * k)
        series = (series + t(coef)) * inv2
    tail = inv ** n * (t(math.factorial(n - 1)) + t(math.factorial(n) / 2.0) * inv + series)
    sign = 1.0 if n % 2 == 1 else -1.0
    return t(sign) * (t(math.factorial(n)) * shift + tail)


@_widened
def polygamma(xp, x, n):
    """ψ^(n)(x), the n-th derivative of digamma (n = 0: digamma itself)."""
    n = int(n)
    if n < 0:
        raise ValueError("polygamma: n must be a non-negative integer, got %d" % n)
    if n == 0:
        return digamma(xp, x)
    t = x.dtype.type
    reflect = x < 0.5
    with numpy.errstate(divide="ignore", invalid="ignore", over="ignore"):
        right = _polygamma_large(xp, n, xp.where(reflect, 1 - x, x))
        frac = x - xp.floor(x)
        pole = frac == 0
        c = _cot_pi(xp, xp.where(pole, t(0.5), frac))
        q = xp.zeros_like(x)
        for coef in reversed(_cot_derivative_polynomial(n)):
            q = q * c + t(coef)
        left = t(1.0 if n % 2 == 0 else -1.0) * right - t(math.pi ** (n + 1)) * q
        left = xp.where(pole, t(numpy.inf) if n % 2 == 1 else t(numpy.nan), left)
        return xp.where(reflect, left, right)
