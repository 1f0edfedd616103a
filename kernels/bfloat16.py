"""bfloat16 values in float32 storage (numpy has no bfloat16 type): a float32 rounded to the nearest bfloat16, ties
to even on the 16 bits kept, NaN to the quiet NaN 0x7FC0 — OneFlow 0.9's conversion (core/common/bfloat16.h:
rounding_bias = ((bits >> 16) & 1) + 0x7FFF, bits = (bits + rounding_bias) >> 16), then widened back to float32
(exact: the low 16 bits zero)."""
import numpy

_QUIET_NAN = numpy.uint32(0x7FC00000)


def round_to_bfloat16(xp, x):
    """float32 array of the bfloat16 numbers nearest to `x` (any floating or integer array)."""
    f = xp.ascontiguousarray(xp.asarray(x, dtype=xp.float32))
    bits = f.view(xp.uint32)
    bias = ((bits >> xp.uint32(16)) & xp.uint32(1)) + xp.uint32(0x7FFF)
    rounded = ((bits + bias) >> xp.uint32(16)) << xp.uint32(16)
    rounded = xp.where(xp.isnan(f), _QUIET_NAN, rounded).astype(xp.uint32)
    return rounded.view(xp.float32)
