"""Every kernel a job runs, on the rows of oneflow_compat/ops/examples.py: with each array module (numpy, and CuPy
where a GPU is usable) and in float32 as well as float64, the op's one-device function gives what its `infer`
declares (shape and dtype: a float32 job stays float32) and the float64 numpy values, and leaves its inputs alone.

The validator (tools/validate.py) runs the same rows in float64 on numpy across devices; this is the kernel-level
check of the same rows for the other array modules and dtypes.
"""
import os
import sys

import numpy as np
import pytest

from oneflow_compat.ir import sbp as S
from oneflow_compat.ops import examples, registry
from oneflow_compat.runtime import plan
from oneflow_compat.tools import validate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, xp  # noqa: E402,F401  (xp: fixture)

validate.load_all_ops()


def _kernel_ops():
    """Op types with rows whose declaration has a pure kernel (not a session-built function, not a collective)."""
    return sorted(t for t in examples.EXAMPLES
                  if registry.get(t).kernel is not None and registry.get(t).build is None)


def _run(op_type, arrays, attrs, xp):
    op = validate.build_op(op_type, arrays, attrs, 1)
    op.sbp_in, op.sbp_out = [S.B] * len(arrays), [S.B] * len(op.outputs)
    fn = plan.device_fn(op, plan.DeviceSlot(op, 0, xp, validate._validation_session()))
    ins = [xp.asarray(a) for a in arrays]
    out = fn(*ins)
    for k, (before, after) in enumerate(zip(arrays, ins)):
        assert np.array_equal(before, host(after), equal_nan=before.dtype.kind == "f"), \
            "%s wrote its input %d" % (op_type, k)
    return op, [host(o) for o in (out if len(op.outputs) > 1 else (out,))]


def _as_float32(a):
    return a.astype(np.float32) if a.dtype == np.float64 else a


@pytest.mark.parametrize("op_type", _kernel_ops())
def test_kernel_on_every_row(xp, op_type):
    for k, row in enumerate(examples.EXAMPLES[op_type]):
        arrays = [np.asarray(a) for a in row.make(np.random.default_rng(k))]
        _, reference = _run(op_type, arrays, row.attrs, np)
        for lowered in (False, True):
            inputs = [_as_float32(a) for a in arrays] if lowered else arrays
            if xp is np and not lowered:
                continue  # the reference itself
            op, outs = _run(op_type, inputs, row.attrs, xp)
            for y, out, ref in zip(op.outputs, outs, reference):
                where = "%s row %d (%s), inputs %s" % (op_type, k, row.note, [a.dtype.name for a in inputs])
                assert validate.fits_shape(out.shape, y.shape, y.is_dynamic) and out.dtype == y.dtype.np, \
                    "%s: %s %s, infer says %s %s" % (
                    where, out.shape, out.dtype, y.shape, y.dtype.np)
                if out.dtype.kind == "f":
                    # float32 results (lowered inputs, or a row in float32 itself) round differently on another
                    # array module: a device's products (cuBLAS) sum in their own order
                    rtol = 2e-4 if lowered or out.dtype == np.float32 else 1e-10
                    scale = float(np.max(np.abs(ref[np.isfinite(ref)]), initial=1.0))
                    np.testing.assert_allclose(out.astype(ref.dtype), ref, rtol=rtol, atol=rtol * scale,
                                               equal_nan=True, err_msg=where)
                else:
                    np.testing.assert_array_equal(out, ref, err_msg=where)
