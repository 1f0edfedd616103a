"""nn.Graph's `config.enable_amp(True)` (issue 22): OneFlow 0.9's AutoMixedPrecision job pass
(oneflow/core/job_rewriter/auto_mixed_precision.cpp @ v0.9.0, passes/amp.py) on CUDA placements — white-list ops
(matmul) and the gray/clear ops between them (bias add, relu, the softmax cross entropy and its gradient) compute
in float16, the rest in float32, with casts at the boundaries; parameters, their gradients and the optimizer stay
float32; a CPU graph is left as it is. On the fake device (tests/strict_device.py) and, under
ONEFLOW_COMPAT_DEVICE=gpu on a GPU machine, on the GPU. References: numpy written here, in float16 exactly where the
pass casts (float32 products of float16 operands rounded to float16, as cuBLAS and numpy's float16 matmul do)."""
import numpy as np
import pytest

import oneflow_compat as flow
import strict_device

F16, F32 = np.float16, np.float32
X = (np.linspace(-1.3, 1.7, 12, dtype=F32) / 3).reshape(3, 4)
LABELS = np.array([0, 2, 1], dtype=np.int64)
W1 = (np.linspace(0.9, -0.8, 20, dtype=F32) / 7).reshape(5, 4)
B1 = np.linspace(-0.2, 0.3, 5, dtype=F32) / 3
W2 = (np.linspace(-0.7, 1.1, 15, dtype=F32) / 3).reshape(3, 5)
B2 = np.array([0.1, -0.25, 1 / 3], dtype=F32)


@pytest.fixture
def gpu(monkeypatch):
    """"gpu" placements on the suite's GPU where it runs on one, else on the fake device."""
    return strict_device.suite_gpu_or_fake(monkeypatch, allow_syncs=True)


def _model(device):
    model = flow.nn.Sequential(flow.nn.Linear(4, 5), flow.nn.ReLU(), flow.nn.Linear(5, 3))
    with flow.no_grad():
        for p, v in zip(model.parameters(), (W1, B1, W2, B2)):
            p.copy_(flow.tensor(v))
    return model.to(device)


def _graph(model, train, amp=True, scaler=None, lr=0.5):
    loss_fn = flow.nn.CrossEntropyLoss()
    opt = flow.optim.SGD(model.parameters(), lr=lr) if train else None

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            if train:
                self.add_optimizer(opt)
            if amp:
                self.config.enable_amp(True)
            if scaler is not None:
                self.set_grad_scaler(scaler)

        def build(self, x, y):
            logits = self.model(x)
            loss = loss_fn(logits, y)
            if train:
                loss.backward()
            return loss, logits, flow.softmax(logits, dim=1)

    return Step()


def _call(step, device):
    return step(flow.tensor(X).to(device), flow.tensor(LABELS).to(device))


def _h(a):
    """float16 rounding of a float32 (or float16) array."""
    return np.asarray(a, F32).astype(F16)


def _mm(a16, b16):
    """A float16 product: float32 products of float16 operands, summed in float32, rounded to float16."""
    return _h(a16.astype(F32) @ b16.astype(F32))


def _forward16():
    """The forward pass where the pass casts: Linear, relu, Linear and the softmax cross entropy in float16."""
    x, w1, b1, w2, b2 = (_h(a) for a in (X, W1, B1, W2, B2))
    a1 = _h(_mm(x, w1.T).astype(F32) + b1)
    h1 = np.maximum(a1, F16(0))
    logits = _h(_mm(h1, w2.T).astype(F32) + b2)
    z = logits.astype(F32)
    e = np.exp(z - z.max(1, keepdims=True))
    prob = _h(e / e.sum(1, keepdims=True))
    per_sample = _h(-np.log(prob.astype(F32)[np.arange(3), LABELS]))
    return dict(x=x, w2=w2, a1=a1, h1=h1, logits=logits, prob=prob, per_sample=per_sample)


def _forward32():
    a1 = X @ W1.T + B1
    logits = np.maximum(a1, 0) @ W2.T + B2
    e = np.exp(logits - logits.max(1, keepdims=True))
    prob = e / e.sum(1, keepdims=True)
    return logits, prob, float(np.mean(-np.log(prob[np.arange(3), LABELS])))


def _ops(step):
    return {op.name: op for op in step._compiled.job.ops}


def _dtypes(op):
    return [str(y.dtype) for y in op.outputs]


def test_the_ops_between_white_ones_compute_in_float16_on_the_device(gpu):
    step = _graph(_model("cuda"), train=True)
    _call(step, "cuda")
    job = step._compiled.job
    ops = _ops(step)
    f16, f32 = ["oneflow.float16"], ["oneflow.float32"]
    # white (matmul) and the gray/clear ops between white ones: float16
    for name in ("model.0-matmul_0", "model.0-add_0", "model.1-relu_0", "model.2-matmul_0", "model.2-add_0"):
        assert _dtypes(ops[name]) == f16, name
    assert _dtypes(ops["sparse_softmax_cross_entropy_0"]) == f16 * 2  # gray, its gradient feeds the matmuls'
    # the loss's sum and the softmax output lead to no white op: float32, after a cast back
    assert _dtypes(ops["reduce_sum_0"]) == f32 and _dtypes(ops["softmax_0"]) == f32
    assert ops["reduce_sum_0"].inputs[0].op.name == "sparse_softmax_cross_entropy_0-out-cast_h2f"
    assert ops["softmax_0"].inputs[0].op.name == "model.2-add_0-out-cast_h2f"
    # one cast per blob, named as 0.9's (`<lbn>-cast_f2h`), right after its producer: parameters and the input
    casts = {op.name: str(op.outputs[0].dtype) for op in job.ops if op.type == "cast" and op.section != "optimizer"}
    for blob in ("_input.0-out", "model.0.weight-out", "model.0.bias-out", "model.2.weight-out", "model.2.bias-out"):
        assert casts[blob + "-cast_f2h"] == "oneflow.float16"
        k = job.ops.index(ops[blob + "-cast_f2h"])
        assert job.ops[k - 1].name == blob[:-len("-out")]
    # the backward: the matmuls' gradients and the relu gradient in float16; each parameter's gradient cast back
    for op in job.ops:
        if op.section == "backward" and op.type == "matmul":
            assert _dtypes(op) == f16, op.name
    updates = [op for op in job.ops if op.type == "optimizer_update"]
    assert len(updates) == 4
    for update in updates:
        assert all(str(x.dtype) != "oneflow.float16" for x in update.inputs), update.name
        grad = update.inputs[1]
        assert grad.op.type == "cast" and grad.op.name.endswith("-cast_h2f"), update.name
        assert str(grad.op.inputs[0].dtype) == "oneflow.float16"
    # no cast into the optimizer's own ops or onto the integer labels
    assert "_input.1-out-cast_f2h" not in casts
    # what the graph shows of its ops: the matmul's operands and result in float16
    text = repr(step)
    assert "(OPERATOR: model.0-matmul-0(" in text
    line = [l for l in text.splitlines() if "(OPERATOR: model.0-matmul-0(" in l][0]
    assert line.count("dtype=(oneflow.float16)") == 3, line


def test_the_numbers_are_float16_where_the_pass_casts(gpu):
    model = _model("cuda")
    step = _graph(model, train=False)
    loss, logits, soft = _call(step, "cuda")
    assert (loss.dtype, logits.dtype, soft.dtype) == (flow.float32,) * 3  # outputs come back in float32
    ops = _ops(step)
    # a predict graph: the first bias add and the relu lie between two matmuls (float16); after the last matmul
    # nothing white follows, so its bias add, the cross entropy and the softmax compute in float32
    assert [_dtypes(ops[n]) for n in ("model.0-add_0", "model.1-relu_0", "model.2-matmul_0")] == [
        ["oneflow.float16"]] * 3
    assert [_dtypes(ops[n]) for n in ("model.2-add_0", "softmax_0")] == [["oneflow.float32"]] * 2
    assert _dtypes(ops["sparse_softmax_cross_entropy_0"]) == ["oneflow.float32"] * 2
    ref = _forward16()
    product = _mm(ref["h1"], ref["w2"].T)
    want = product.astype(F32) + B2
    got = logits.numpy()
    # the last product is a float16 number (a float32 computation would not be): got - bias recovers it
    np.testing.assert_allclose(got - B2, (got - B2).astype(F16).astype(F32), rtol=0, atol=1e-6)
    # equal to the reference up to the order a device sums a product in: one float16 step at most
    assert np.all(np.abs(got - want) <= np.spacing(np.abs(product)).astype(F32) * 1.001 + 1e-7)
    e = np.exp(want - want.max(1, keepdims=True))
    prob = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(soft.numpy(), prob, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(float(loss.numpy()), np.mean(-np.log(prob[np.arange(3), LABELS])), rtol=1e-3)
    assert all(p.dtype == flow.float32 for p in model.parameters())


def _train_reference16(scale, lr):
    """One SGD step of the graph under AMP with loss scale `scale`: the backward in float16 where the pass casts
    (the loss seed and its 1/N in float32, then float16 through the cross entropy's gradient, the matmuls' and the
    relu's), each gradient cast to float32, unscaled, applied."""
    f = _forward16()
    n = len(LABELS)
    dy = _h(F32(scale) * F32(1.0 / n))  # the seed times the mean's 1/N in float32, cast to float16
    onehot = np.zeros((n, 3), F32)
    onehot[np.arange(n), LABELS] = 1
    dlogits = _h((f["prob"].astype(F32) - onehot) * dy.astype(F32))
    g_w2 = _mm(dlogits.T, f["h1"])
    g_b2 = _h(dlogits.astype(F32).sum(0))
    dh1 = _mm(dlogits, f["w2"])
    da1 = np.where(f["a1"] > 0, dh1, F16(0))
    g_w1 = _mm(da1.T, f["x"])
    g_b1 = _h(da1.astype(F32).sum(0))
    return [w - F32(lr) * (g.astype(F32) / F32(scale)) for w, g in zip((W1, B1, W2, B2), (g_w1, g_b1, g_w2, g_b2))]


def _train_reference32(lr):
    n = len(LABELS)
    a1 = X @ W1.T + B1
    h1 = np.maximum(a1, 0)
    _, prob, _ = _forward32()
    onehot = np.zeros((n, 3), F32)
    onehot[np.arange(n), LABELS] = 1
    dlogits = (prob - onehot) / n
    da1 = np.where(a1 > 0, dlogits @ W2, 0)
    grads = (da1.T @ X, da1.sum(0), dlogits.T @ h1, dlogits.sum(0))
    return [w - F32(lr) * g for w, g in zip((W1, B1, W2, B2), grads)]


def test_a_training_step_with_a_grad_scaler_updates_float32_parameters_from_float16_gradients(gpu):
    model = _model("cuda")
    lr, scale = 0.5, 2.0 ** 10
    scaler = flow.amp.GradScaler(init_scale=scale, growth_factor=2.0, backoff_factor=0.5, growth_interval=1)
    step = _graph(model, train=True, scaler=scaler, lr=lr)
    loss, _, _ = _call(step, "cuda")
    assert loss.dtype == flow.float32
    params = [p.numpy() for p in model.parameters()]
    assert all(p.dtype == F32 for p in params) and all(p.dtype == flow.float32 for p in model.parameters())
    want16 = _train_reference16(scale, lr)
    want32 = _train_reference32(lr)
    for k, (got, w16, w32, w0) in enumerate(zip(params, want16, want32, (W1, B1, W2, B2))):
        # the step w0 - got is lr / scale times a float16 gradient (of the scaled loss, cast to float32 as it
        # reaches the optimizer): read back, it lies on float16's grid (a float32 backward would not)
        g = (w0 - got).astype(np.float64) * scale / lr
        np.testing.assert_allclose(g, g.astype(F16).astype(np.float64), rtol=0, atol=1e-4, err_msg="parameter %d" % k)
        # and equals the reference's up to the order a device sums in (a float16 step or a few)
        ref = (w0 - w16).astype(np.float64) * scale / lr
        np.testing.assert_allclose(g, ref, rtol=0, atol=0.01 * np.abs(ref).max(), err_msg="parameter %d" % k)
    assert max(np.abs(a - b).max() for a, b in zip(want16, want32)) > 1e-5  # float16 and float32 steps differ
    # the scaler's state machine ran in the graph: a finite step doubles the scale (growth_interval 1)
    states = {k: v.numpy() for k, v in step.state_dict().items() if not isinstance(v, dict)}
    assert states["System-Train-DynamicLossScale-%s-LossScale" % step.name] == 2 * scale
    # a second step trains on from float32 parameters
    _call(step, "cuda")
    assert all(p.dtype == flow.float32 for p in model.parameters())


def test_a_cpu_graph_is_left_as_it_is():
    # OneFlow's pass casts the ops of CUDA placements alone (MakePredicatorIsAllowedToRunWithHalf)
    plain = _graph(_model("cpu"), train=True, amp=False)
    amp = _graph(_model("cpu"), train=True)
    got_plain, got_amp = _call(plain, "cpu"), _call(amp, "cpu")
    ops_plain = [(op.type, _dtypes(op)) for op in plain._compiled.job.ops]
    ops_amp = [(op.type, _dtypes(op)) for op in amp._compiled.job.ops]
    assert ops_amp == ops_plain
    assert not any("float16" in str(d) for _, ds in ops_amp for d in ds)
    for a, b in zip(got_plain, got_amp):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for a, b in zip(plain.model.parameters(), amp.model.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_enable_amp_checks_its_arguments_as_oneflow():
    config = _graph(_model("cpu"), train=False, amp=False).config
    with pytest.raises(AssertionError):
        config.enable_amp(1)
    with pytest.raises(AssertionError):
        config.enable_amp(True, dtype=flow.float32)
    config.enable_amp(True, dtype=flow.bfloat16)
    assert config._amp and config._amp_dtype is flow.bfloat16


def _cnn_losses(amp, steps=3):
    """A conv / batch norm / relu / max pool / layer norm / gelu classifier trained with Adam in a graph."""
    flow.manual_seed(0)
    model = flow.nn.Sequential(flow.nn.Conv2d(2, 4, 3), flow.nn.BatchNorm2d(4), flow.nn.ReLU(), flow.nn.MaxPool2d(2),
                               flow.nn.Flatten(), flow.nn.Linear(36, 6), flow.nn.LayerNorm(6), flow.nn.GELU(),
                               flow.nn.Linear(6, 3)).to("cuda")
    opt = flow.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = flow.nn.CrossEntropyLoss()

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)
            if amp:
                self.config.enable_amp(True)

        def build(self, x, y):
            loss = loss_fn(self.model(x), y)
            loss.backward()
            return loss

    step = Step()
    x = flow.tensor(np.random.RandomState(0).randn(4, 2, 8, 8).astype(F32)).to("cuda")
    y = flow.tensor(np.array([0, 1, 2, 1])).to("cuda")
    losses = [float(step(x, y).numpy()) for _ in range(steps)]
    return losses, step, model


def test_a_convolutional_network_trains_in_mixed_precision_as_in_float32(gpu):
    plain, _, _ = _cnn_losses(amp=False)
    mixed, step, model = _cnn_losses(amp=True)
    ops = _ops(step)
    assert _dtypes(ops["model.3-max_pool2d_0"]) == ["oneflow.float16"]  # clear, between the conv and the matmul
    convs = [op for op in step._compiled.job.ops if op.type.startswith("conv2d")]
    assert convs and all(_dtypes(op) == ["oneflow.float16"] for op in convs)
    assert all(p.dtype == flow.float32 for p in model.parameters())
    assert model[1].running_mean.dtype == flow.float32
    # the same training, to float16's precision; and it learns
    np.testing.assert_allclose(mixed, plain, rtol=1e-2)
    assert mixed[-1] < mixed[0]
    assert mixed != plain  # float16 somewhere: not the float32 numbers


def _bf16(a):
    """bfloat16 rounding (nearest even on the 16 bits kept) of float32 values, in float32."""
    bits = np.asarray(a, F32).copy().view(np.uint32)
    bits[:] = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.view(F32)


def test_enable_amp_with_bfloat16_computes_the_white_ops_in_bfloat16(gpu):
    model = flow.nn.Linear(3, 2).to("cuda")

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.config.enable_amp(True, dtype=flow.bfloat16)

        def build(self, x):
            return self.model(x)

    x = np.linspace(-1, 1, 12, dtype=F32).reshape(4, 3) / 3
    step = Step()
    y = step(flow.tensor(x).to("cuda"))
    assert _dtypes(_ops(step)["model-matmul_0"]) == ["oneflow.bfloat16"] and y.dtype == flow.float32
    w, b = model.weight.numpy(), model.bias.numpy()
    product = _bf16(_bf16(x) @ _bf16(w).T)  # bfloat16 operands, the product rounded to bfloat16
    got = y.numpy() - b  # the bias added in float32 after it
    np.testing.assert_allclose(got, _bf16(got), rtol=0, atol=1e-6)
    assert np.all(np.abs(got - product) <= np.abs(product) * 2.0 ** -7 + 1e-7)  # one bfloat16 step at most
