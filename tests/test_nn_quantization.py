"""OneFlow 0.9's quantization-aware training modules (nn.MinMaxObserver, nn.MovingAverageMinMaxObserver,
nn.FakeQuantization, nn.Quantization, nn.QatConv1d/2d/3d) against numpy written here from OneFlow 0.9's kernels
(oneflow/user/kernels/*quantization*_kernel.cpp, *observer_kernel.cpp at v0.9.0): google symmetric / affine, per
layer / per channel, cambricon's power-of-two shift; round half to even; the straight-through gradient; a global
tensor and an nn.Graph giving the eager local numbers; OneFlow's errors."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn


def _x(shape=(4, 3, 5), seed=0):
    return (np.random.default_rng(seed).random(shape) - 0.5).astype(np.float32)


# --- numpy references (OneFlow 0.9's formulas) ---------------------------------------------------------------------
def ref_observer(x, bits, scheme, per_layer=True, formula="google"):
    if formula == "cambricon":
        bound = max(abs(x.max()), abs(x.min()))
        return np.array([np.floor(np.log2(bound)) - (bits - 2)], np.float32), np.zeros(1, np.float32)
    rows = x.reshape(1, -1) if per_layer else x.reshape(x.shape[0], -1)
    lo, hi = rows.min(1), rows.max(1)
    if scheme == "symmetric":
        return (np.maximum(abs(lo), abs(hi)) / np.float32(2 ** (bits - 1) - 1)).astype(np.float32), np.zeros_like(lo)
    scale = ((hi - lo) / np.float32(2 ** bits - 1)).astype(np.float32)
    return scale, (-np.rint(lo / scale)).astype(np.float32)


def ref_quantize(x, scale, zero, bits, scheme, formula="google", back=True):
    if formula == "cambricon":
        step = np.float32(2.0 ** int(scale.reshape(-1)[0]))
        q = np.clip(np.rint(x / step), -2 ** (bits - 1), 2 ** (bits - 1) - 1)
        return q * step if back else q
    shape = (-1,) + (1,) * (x.ndim - 1) if scale.size > 1 else ()
    s, z = scale.reshape(shape), zero.reshape(shape)
    if scheme == "symmetric":
        q = np.clip(np.rint(x / s), -2 ** (bits - 1), 2 ** (bits - 1) - 1)
        return q * s if back else q
    z = np.floor(np.abs(z) + 0.5) * np.sign(z)  # the kernel's uint8 zero point: C's round
    q = np.clip(np.rint(x / s + z), 0, 2 ** bits - 1)
    return (q - z) * s if back else q


CASES = [("google", "symmetric", True, 8), ("google", "symmetric", False, 8), ("google", "affine", True, 8),
         ("google", "affine", False, 5), ("cambricon", "symmetric", True, 8), ("cambricon", "affine", True, 4)]


@pytest.mark.parametrize("formula,scheme,per_layer,bits", CASES)
def test_observer_fake_quantization_and_quantization_match_numpy(formula, scheme, per_layer, bits):
    x = _x()
    observer = nn.MinMaxObserver(quantization_formula=formula, quantization_bit=bits, quantization_scheme=scheme,
                                 per_layer_quantization=per_layer)
    scale, zero = observer(flow.tensor(x))
    want_s, want_z = ref_observer(x, bits, scheme, per_layer, formula)
    assert tuple(scale.shape) == ((1,) if per_layer else (4,)) and scale.dtype == flow.float32
    np.testing.assert_allclose(scale.numpy(), want_s, rtol=1e-6)
    np.testing.assert_array_equal(zero.numpy(), want_z)
    fake = nn.FakeQuantization(quantization_formula=formula, quantization_bit=bits, quantization_scheme=scheme)
    quant = nn.Quantization(quantization_formula=formula, quantization_bit=bits, quantization_scheme=scheme)
    np.testing.assert_allclose(fake(flow.tensor(x), scale, zero).numpy(),
                               ref_quantize(x, want_s, want_z, bits, scheme, formula), rtol=1e-5, atol=1e-7)
    q = quant(flow.tensor(x), scale, zero).numpy()
    np.testing.assert_array_equal(q, ref_quantize(x, want_s, want_z, bits, scheme, formula, back=False))
    assert q.dtype == np.float32 and np.array_equal(q, np.round(q))


def test_rounding_is_half_to_even_and_the_signed_range_reaches_minus_two_to_the_b_minus_1():
    x = flow.tensor(np.array([0.5, 1.5, 2.5, -0.5, -2.5, 300.0, -300.0], np.float32))
    one, zero = flow.ones(1), flow.zeros(1)
    q = nn.Quantization()(x, one, zero)
    np.testing.assert_array_equal(q.numpy(), [0, 2, 2, -0.0, -2, 127, -128])
    np.testing.assert_array_equal(flow._C.fake_quantization(x, one * 0.5, zero, "google", 8, "symmetric").numpy(),
                                  [0.5, 1.5, 2.5, -0.5, -2.5, 63.5, -64.0])
    # affine: round(x / scale + zero_point) in [0, 2^b - 1]
    q = nn.Quantization(quantization_scheme="affine", quantization_bit=4)(x, one, zero + 3)
    np.testing.assert_array_equal(q.numpy(), [4, 4, 6, 2, 0, 15, 0])  # 3.5 4.5 5.5 2.5 0.5: to even


def test_fake_quantization_gradient_passes_straight_through():
    x = flow.tensor(_x(), requires_grad=True)
    s, z = nn.MinMaxObserver(quantization_scheme="affine")(x)
    assert not s.requires_grad
    y = nn.FakeQuantization(quantization_scheme="affine")(x, s, z)
    (y * flow.tensor(np.arange(60, dtype=np.float32).reshape(4, 3, 5))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(60, dtype=np.float32).reshape(4, 3, 5))


@pytest.mark.parametrize("formula,scheme", [("google", "symmetric"), ("google", "affine"),
                                            ("cambricon", "symmetric")])
def test_moving_average_observer_follows_the_moving_extremes(formula, scheme):
    m = nn.MovingAverageMinMaxObserver(quantization_formula=formula, quantization_scheme=scheme, momentum=0.9,
                                       quantization_bit=8)
    step = flow.zeros(1, dtype=flow.int64)
    hi = lo = 0.0
    for k in range(3):
        x = _x(seed=k) * (k + 1)
        scale, zero = m(flow.tensor(x), step)
        cur_hi = max(abs(x.max()), abs(x.min())) if scheme == "symmetric" else x.max()
        cur_lo = cur_hi if scheme == "symmetric" else x.min()
        hi = cur_hi if hi == 0 else hi * 0.9 + cur_hi * (1 - 0.9)
        lo = cur_lo if lo == 0 else lo * 0.9 + cur_lo * (1 - 0.9)
        np.testing.assert_allclose(m.moving_max.numpy(), [hi], rtol=1e-6)
        np.testing.assert_allclose(m.moving_min.numpy(), [lo], rtol=1e-6)
        if formula == "cambricon":
            want_s, want_z = np.floor(np.log2(hi)) - 6, 0.0
        elif scheme == "symmetric":
            want_s, want_z = hi / 127, 0.0
        else:
            want_s = (hi - lo) / 255
            want_z = -np.sign(lo / want_s) * np.floor(abs(lo / want_s) + 0.5)  # -std::round
        np.testing.assert_allclose(scale.numpy(), [want_s], rtol=1e-5)
        np.testing.assert_allclose(zero.numpy(), [want_z], rtol=1e-5)
    # past stop_update_after_iters, and in eval mode, the extremes stay
    before = m.moving_max.numpy().copy()
    m(flow.tensor(_x(seed=9) * 10), flow.tensor([2], dtype=flow.int64))
    m.eval()
    m(flow.tensor(_x(seed=9) * 10), step)
    np.testing.assert_array_equal(m.moving_max.numpy(), before)
    m.reset_running_stats()
    assert m.moving_max.numpy()[0] == 0 and m.moving_min.numpy()[0] == 0


@pytest.mark.parametrize("cls,nd", [(nn.QatConv1d, 1), (nn.QatConv2d, 2), (nn.QatConv3d, 3)])
def test_qat_convolutions_convolve_the_fake_quantized_input_and_weight(cls, nd):
    flow.manual_seed(0)
    conv = cls(3, 4, 3, padding=1, quantization_scheme="affine", weight_quant_per_layer=False)
    x = _x((2, 3) + (5,) * nd, seed=3)
    y = conv(flow.tensor(x))
    xs, xz = ref_observer(x, 8, "affine")  # the first moving extremes are the batch's own
    w = conv.weight.numpy()
    ws, wz = ref_observer(w, 8, "affine", per_layer=False)
    conv_f = getattr(flow.nn.functional, "conv%dd" % nd)
    want = conv_f(flow.tensor(ref_quantize(x, xs, xz, 8, "affine").astype(np.float32)),
                  flow.tensor(ref_quantize(w, ws, wz, 8, "affine").astype(np.float32)), conv.bias, padding=1)
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert conv.current_train_step.dtype == flow.int64 and conv.current_train_step.numpy()[0] == 0
    y.sum().backward()
    assert conv.weight.grad is not None and conv.weight.grad.shape == conv.weight.shape
    assert set(dict(conv.named_buffers())) == {"current_train_step", "input_min_max_observer.moving_max",
                                               "input_min_max_observer.moving_min"}


def test_global_tensors_and_graph_give_the_local_numbers():
    x = _x()
    s, z = nn.MinMaxObserver(quantization_scheme="affine", per_layer_quantization=False)(flow.tensor(x))
    want = nn.FakeQuantization(quantization_scheme="affine")(flow.tensor(x), s, z).numpy()
    p = flow.placement("cpu", ranks=[0])
    gx = flow.tensor(x).to_global(p, flow.sbp.split(0))
    gs, gz = nn.MinMaxObserver(quantization_scheme="affine", per_layer_quantization=False)(gx)
    gy = nn.FakeQuantization(quantization_scheme="affine")(gx, gs, gz)
    assert gy.is_global and gy.placement == p
    np.testing.assert_array_equal(gy.numpy(), want)

    observer, fake = nn.MinMaxObserver(quantization_scheme="affine", per_layer_quantization=False), \
        nn.FakeQuantization(quantization_scheme="affine")

    class G(flow.nn.Graph):
        def build(self, v):
            return fake(v, *observer(v))

    np.testing.assert_array_equal(G()(flow.tensor(x)).numpy(), want)


def test_functional_forms_are_bound_in_oneflow_C():
    from oneflow_compat._global import nn_quantization as q

    assert flow._C.min_max_observer is q.min_max_observer and flow._C.quantization is q.quantization
    assert flow._C.moving_average_min_max_observer is q.moving_average_min_max_observer
    x = flow.tensor(_x())
    s, z = flow._C.min_max_observer(x, "google", 8, "symmetric", True)
    np.testing.assert_array_equal(s.numpy(), nn.MinMaxObserver()(x)[0].numpy())


def test_bad_arguments_are_named():
    x = flow.tensor(_x())
    with pytest.raises(ValueError, match="quantization_bit must be in 2..8, got 9"):
        nn.MinMaxObserver(quantization_bit=9)(x)
    with pytest.raises(ValueError, match="quantization_formula must be 'google' or 'cambricon', got 'tflite'"):
        nn.FakeQuantization(quantization_formula="tflite")(x, flow.ones(1), flow.zeros(1))
    with pytest.raises(ValueError, match="per-channel mode is not supported in cambricon scheme"):
        nn.MinMaxObserver(quantization_formula="cambricon", per_layer_quantization=False)(x)
    with pytest.raises(ValueError, match="per-channel scale must have one entry per row of axis 0 \\(4\\)"):
        nn.Quantization()(x, flow.ones(3), flow.zeros(3))
    with pytest.raises(TypeError, match="current_train_step must be an int64 tensor"):
        nn.MovingAverageMinMaxObserver()(x, flow.zeros(1))


def test_module_paths_of_oneflow_0_9():
    import oneflow_compat.nn.modules.fake_quantization as fq
    import oneflow_compat.nn.modules.min_max_observer as mmo
    import oneflow_compat.nn.modules.moving_average_min_max_observer as mamo
    import oneflow_compat.nn.modules.quantization as qm
    import oneflow_compat.nn.qat.conv as qat

    assert (fq.FakeQuantization, mmo.MinMaxObserver, mamo.MovingAverageMinMaxObserver, qm.Quantization) == (
        nn.FakeQuantization, nn.MinMaxObserver, nn.MovingAverageMinMaxObserver, nn.Quantization)
    assert (qat.QatConv1d, qat.QatConv2d, qat.QatConv3d) == (nn.QatConv1d, nn.QatConv2d, nn.QatConv3d)


def test_qat_conv_gradients_pass_straight_through_and_a_graph_updates_the_observer():
    flow.manual_seed(1)
    conv = nn.QatConv2d(3, 4, 3, quantization_scheme="affine")
    x = _x((2, 3, 6, 6), seed=5)
    xt = flow.tensor(x, requires_grad=True)
    conv(xt).sum().backward()
    # straight through: the gradients of the convolution at the fake-quantized input and weight
    w = conv.weight.numpy()
    xs, xz = ref_observer(x, 8, "affine")
    ws, wz = ref_observer(w, 8, "affine")
    xq = flow.tensor(ref_quantize(x, xs, xz, 8, "affine").astype(np.float32), requires_grad=True)
    wq = flow.tensor(ref_quantize(w, ws, wz, 8, "affine").astype(np.float32), requires_grad=True)
    flow.nn.functional.conv2d(xq, wq, conv.bias.detach()).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), xq.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(conv.weight.grad.numpy(), wq.grad.numpy(), rtol=1e-5, atol=1e-5)

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.conv = conv

        def build(self, v):
            return self.conv(v)

    conv.input_min_max_observer.reset_running_stats()
    graph = G()
    eager_first = conv(flow.tensor(x)).numpy()
    conv.input_min_max_observer.reset_running_stats()
    np.testing.assert_allclose(graph(flow.tensor(x)).numpy(), eager_first, rtol=1e-6, atol=1e-6)
    graph(flow.tensor(x * 2))  # the graph's in-place update reaches the module's buffers
    np.testing.assert_allclose(conv.input_min_max_observer.moving_max.numpy(),
                               [0.95 * x.max() + 0.05 * (2 * x).max()], rtol=1e-6)
