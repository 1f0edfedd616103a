"""OneFlow v0.4.0's additions to the legacy API (beside flow.Model, tests/test_legacy_model.py): the fused attention
helpers against numpy (forward and backward, float32 and float64, 1 and 2 devices), hierarchical_parallel_cast,
flow.profiler, flow.distributed ranks, flow.deprecated.nn.Module and InitEagerGlobalSession."""
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_legacy_array import _list_job  # noqa: E402
from test_legacy_math import _TOL, surface  # noqa: E402


def _attention_ref(x, head_size, alpha):
    s, b, hidden = x.shape
    n = hidden // (3 * head_size)
    h = x.reshape(s, b, n, 3, head_size)
    q, k, v = (h[:, :, :, i, :].transpose(1, 2, 0, 3) for i in range(3))
    return q, k, v, alpha * q @ np.swapaxes(k, -1, -2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("devices", [1, 2])
def test_fused_self_attention_query_mul_key_and_value(dtype, devices):
    rng = np.random.default_rng(0)
    head_size, alpha = 2, 0.5
    x = rng.standard_normal((3, 4, 2 * 3 * head_size)).astype(dtype)
    q, k, v, qmk = _attention_ref(x.astype(np.float64), head_size, alpha)
    tol = _TOL[np.dtype(dtype)] * 10

    got, (g,), r = surface(lambda h: flow.nn.fused_self_attention_query_mul_key_and_value(h, head_size, alpha)[0],
                           [x], devices)
    assert got.shape == (4, 2, 3, 3)
    np.testing.assert_allclose(got, qmk, rtol=tol, atol=tol)
    dq, dk = alpha * r @ k, alpha * np.swapaxes(r, -1, -2) @ q
    want = np.zeros((3, 4, 2, 3, head_size))
    want[:, :, :, 0, :] = dq.transpose(2, 0, 1, 3)
    want[:, :, :, 1, :] = dk.transpose(2, 0, 1, 3)
    np.testing.assert_allclose(g, want.reshape(x.shape), rtol=tol, atol=tol)

    got, (g,), r = surface(lambda h: flow.nn.fused_self_attention_query_mul_key_and_value(h, head_size)[1],
                           [x], devices)
    np.testing.assert_array_equal(got, v.astype(dtype))
    want = np.zeros((3, 4, 2, 3, head_size), dtype)
    want[:, :, :, 2, :] = r.transpose(2, 0, 1, 3)
    np.testing.assert_array_equal(g, want.reshape(x.shape))


def test_fused_self_attention_checks_the_hidden_size():
    with pytest.raises(ValueError, match="not a multiple of 3"):
        _list_job(lambda h: flow.nn.fused_self_attention_query_mul_key_and_value(h, 3)[0],
                  [np.ones((2, 2, 12), np.float32)])


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("devices", [1, 2])
def test_fused_scale_tril_softmax_dropout_without_dropout(dtype, devices):
    x = np.random.default_rng(1).standard_normal((2, 4, 4)).astype(dtype)
    got, (g,), r = surface(lambda v: flow.math.fused_scale_tril_softmax_dropout(
        v, diagonal=0, fill_value=-1e4, scale=0.5), [x], devices)
    mask = np.tril(np.ones((4, 4), bool))
    y = _softmax(np.where(mask, x.astype(np.float64) * 0.5, -1e4))
    tol = _TOL[np.dtype(dtype)] * 10
    np.testing.assert_allclose(got, y, rtol=tol, atol=tol)
    dz = y * (r - (r * y).sum(-1, keepdims=True))
    np.testing.assert_allclose(g, np.where(mask, 0.5 * dz, 0), rtol=tol, atol=tol)


def test_fused_scale_tril_softmax_dropout_drops_in_any_job():
    # OneFlow v0.4.0 draws the random_mask_like mask whatever the job's type: kept entries are scaled by 1/(1-rate)
    x = np.random.default_rng(2).standard_normal((8, 16, 16)).astype(np.float32)
    (out,) = _list_job(lambda v: flow.nn.fused_scale_tril_softmax_dropout(v, rate=0.5, seed=3, name="attn"), [x])
    y = _softmax(np.where(np.tril(np.ones((16, 16), bool)), x, 0))
    kept = out != 0
    np.testing.assert_allclose(out[kept], 2 * y[kept], rtol=1e-5)
    assert 0.4 < kept.mean() < 0.6


def test_hierarchical_parallel_cast_on_a_flat_placement():
    x = np.arange(24, dtype=np.float64).reshape(4, 6)
    for dists, kw in ((["B"], {}), (["S(1)"], {"grad_mode": "identity"}),
                      ([flow.distribute.split(0)], {"grad_mode": "manual", "grad_parallel_distribution": ["B"]})):
        got, (g,), r = surface(lambda v: flow.math.square(flow.hierarchical_parallel_cast(v, dists, **kw)), [x], 2)
        np.testing.assert_array_equal(got, x * x)
        np.testing.assert_array_equal(g, 2 * x * r)
    # one entry per dimension of the placement's hierarchy (a mesh takes two: tests/test_sbp2d.py)
    with pytest.raises(ValueError, match=r"has 2 entries, but the placement .* has 1 dimension \(hierarchy"):
        _list_job(lambda v: flow.hierarchical_parallel_cast(v, ["S(0)", "B"]), [x])
    with pytest.raises(ValueError, match="grad_mode"):
        _list_job(lambda v: flow.hierarchical_parallel_cast(v, ["B"], grad_mode="other"), [x])


def test_profiler_marks_pass_blobs_through_and_ranges_do_nothing():
    x = np.arange(6, dtype=np.float32)
    (out,) = _list_job(lambda v: flow.profiler.nvtx_end(flow.profiler.nvtx_start(v, "fwd"), "fwd"), [x])
    np.testing.assert_array_equal(out, x)
    assert flow.profiler.range_push("step") is None and flow.profiler.range_pop() is None


def test_ranks_deprecated_module_and_eager_session():
    assert flow.distributed.get_rank() == 0 and flow.distributed.get_world_size() == 1
    assert flow.InitEagerGlobalSession() is None

    class Double(flow.deprecated.nn.Module):
        def forward(self, x):
            return 2 * x

    m = Double()
    assert m.module_name.startswith("Module_") and m.call_seq_no == 0
    assert m(3) == 6 and m(4) == 8 and m.call_seq_no == 2
    assert Double("named").module_name == "named"
    with pytest.raises(AssertionError, match="do not override __call__"):
        class Bad(flow.deprecated.nn.Module):
            def __call__(self, *args):
                return None
