"""Special functions numpy lacks (and the kernels must not take from scipy): erf, erfc, lgamma and digamma, on
numpy and CuPy arrays alike, in the array's floating dtype (half precision is computed in float32).

* erfc(a) for a >= 0 comes from the Chebyshev table of the GELU kernel (`activation._erfc_nonnegative`, about 1e-14
  relative); erfc(-a) = 2 - erfc(a). erf(x) = 1 - erfc(x) loses the relative precision of small |x|, so below 0.5
  erf is summed from its Taylor series 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1)) (24 terms: below 1e-17 at 0.5).
* lgamma(x) = log|Γ(x)| by Lanczos' approximation (g = 7, 9 coefficients: about 1e-15 relative in Γ) for
  x >= 0.5, and the reflection formula log(π / |sin(πx)|) - lgamma(1 - x) below; +inf at the poles 0, -1, -2, …
* digamma(x) = Γ'(x)/Γ(x), the derivative of lgamma: the recurrence ψ(x) = ψ(x + 1) - 1/x up to x >= 10, then the
  asymptotic series ln x - 1/(2x) - Σ B_2k / (2k x^2k) (error below 1e-14 there); ψ(1 - x) - π cot(πx) for x < 0.5.
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
    def run(xp, x, *args):
        if x.dtype.itemsize < 4:
            return fn(xp, x.astype(xp.float32), *args).astype(x.dtype)
        return fn(xp, x, *args)

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
