"""The legacy `func_config.enable_auto_mixed_precision(True)` (v0.3/v0.4 `@flow.global_function`): OneFlow v0.4.0's
AutoMixedPrecision job pass (oneflow/core/job_rewriter/auto_mixed_precision.cpp and auto_mixed_precision_lists.cpp @
v0.4.0; run before GenerateBackwardAndOptimizerOpConfs, job_build_and_infer_ctx.cpp @ v0.4.0) — passes/amp.py with
`amp_lists.V04`, on the forward ops alone: white ops (matmul) and the gray/clear ops between white ones (bias add,
relu, sigmoid) compute in float16, the rest in float32; the backward is built from the rewritten forward, so each
gradient op computes in its forward op's dtype and every variable's gradient reaches the optimizer in float32
(the gradient of its `-cast_f2h`); variables stay float32; a CPU job is left as it is. Loss scaling is the
optimizer's, as in v0.4 (`loss_scale_factor`, `loss_scale_policy`).

On the fake device (tests/strict_device.py) and, under ONEFLOW_COMPAT_DEVICE=gpu on a GPU machine, on the GPU.
References: numpy written here, in float16 exactly where the pass casts (float32 products of float16 operands
rounded to float16, as cuBLAS does), compared up to one float16 step (the order a device sums a product in)."""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
import strict_device
from oneflow_compat.framework import trace
from oneflow_compat.framework.session import default_session
from oneflow_compat.ops import amp_lists
from oneflow_compat.passes import amp

F16, F32 = np.float16, np.float32
X = (np.linspace(-1.3, 1.7, 12, dtype=F32) / 3).reshape(3, 4)
LABELS = np.array([0, 2, 1], dtype=np.int32)
W1 = (np.linspace(0.9, -0.8, 20, dtype=F32) / 7).reshape(5, 4)
B1 = np.linspace(-0.2, 0.3, 5, dtype=F32) / 3
W2 = (np.linspace(-0.7, 1.1, 15, dtype=F32) / 3).reshape(3, 5)
B2 = np.array([0.1, -0.25, 1 / 3], dtype=F32)
VALUES = {"h-weight": W1, "h-bias": B1, "o-weight": W2, "o-bias": B2}
F16_NAME, F32_NAME = "oneflow.float16", "oneflow.float32"


@pytest.fixture
def gpu(monkeypatch):
    """"gpu" placements on the suite's GPU where it runs on one, else on the fake device."""
    return strict_device.suite_gpu_or_fake(monkeypatch, allow_syncs=True)


def _config(amp_on=True):
    cfg = flow.function_config()
    if amp_on:
        cfg.enable_auto_mixed_precision(True)
    return cfg


def _mlp(x, activation=flow.nn.relu):
    h = flow.layers.dense(x, 5, activation=activation, name="h")
    return flow.layers.dense(h, 3, name="o")


def _jobs(device, amp_on=True, train=True, lr=0.5, loss_scale_policy=None, activation=flow.nn.relu):
    """A legacy two-layer dense classifier with a softmax cross-entropy loss on one `device` ("gpu"/"cpu"), its
    variables set to the values above; returns the job function."""
    flow.clear_default_session()
    if device == "gpu":
        flow.config.gpu_device_num(1)
    else:
        flow.config.cpu_device_num(1)

    @flow.global_function(type="train" if train else "predict", function_config=_config(amp_on))
    def step(x: tp.Numpy.Placeholder((3, 4)), y: tp.Numpy.Placeholder((3,), dtype=flow.int32)
             ) -> tp.Numpy:
        logits = _mlp(x, activation)
        loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        if train:
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [lr]), momentum=0,
                               loss_scale_policy=loss_scale_policy).minimize(loss)
            return loss
        return logits

    flow.load_variables(dict(VALUES))
    return step


def _job():
    return default_session().compiled["step"].job


def _dtypes(op):
    return [str(y.meta.dtype) for y in op.outputs]


def _h(a):
    return np.asarray(a, F32).astype(F16)


def _mm(a16, b16):
    """A float16 product: float32 products of float16 operands, summed in float32, rounded to float16."""
    return _h(a16.astype(F32) @ b16.astype(F32))


def _forward():
    """The forward pass where v0.4's pass casts: the first layer (matmul, bias add, relu) and the second matmul in
    float16; the second bias add (after the last white op: nothing white follows), the cross entropy and the mean
    in float32."""
    x, w1, b1, w2 = (_h(a) for a in (X, W1, B1, W2))
    a1 = _h(_mm(x, w1.T).astype(F32) + b1.astype(F32))
    h1 = np.maximum(a1, F16(0))
    product = _mm(h1, w2.T)
    logits = product.astype(F32) + B2
    e = np.exp(logits - logits.max(1, keepdims=True))
    prob = e / e.sum(1, keepdims=True)
    loss = float(np.mean(-np.log(prob[np.arange(3), LABELS])))
    return dict(x=x, w2=w2, a1=a1, h1=h1, product=product, logits=logits, prob=prob, loss=loss)


def _grads16(scale=1.0):
    """The gradients of (the loss × `scale`) as the backward built from the rewritten forward computes them: the
    cross entropy's and the second bias's in float32, cast to float16 through the gradient of the cast back, the
    matmuls' and the relu's in float16, the first bias's summed in float32 and rounded to float16 (bias_add's
    gradient), each variable's cast to float32 by the gradient of its `-cast_f2h`."""
    f = _forward()
    n = len(LABELS)
    onehot = np.zeros((n, 3), F32)
    onehot[np.arange(n), LABELS] = 1
    dlogits = (f["prob"] - onehot) * (F32(scale) * F32(1.0 / n))
    d16 = _h(dlogits)
    g_w2 = _mm(d16.T, f["h1"])
    dh1 = _mm(d16, f["w2"])
    da1 = np.where(f["a1"] > 0, dh1, F16(0))
    g_w1 = _mm(da1.T, f["x"])
    g_b1 = _h(da1.astype(F32).sum(0))
    return {"h-weight": g_w1, "h-bias": g_b1, "o-weight": g_w2, "o-bias": dlogits.sum(0)}


def _grads32():
    n = len(LABELS)
    a1 = X @ W1.T + B1
    h1 = np.maximum(a1, 0)
    logits = h1 @ W2.T + B2
    e = np.exp(logits - logits.max(1, keepdims=True))
    prob = e / e.sum(1, keepdims=True)
    onehot = np.zeros((n, 3), F32)
    onehot[np.arange(n), LABELS] = 1
    dlogits = (prob - onehot) / n
    da1 = np.where(a1 > 0, dlogits @ W2, 0)
    return {"h-weight": da1.T @ X, "h-bias": da1.sum(0), "o-weight": dlogits.T @ h1, "o-bias": dlogits.sum(0)}


def _variables():
    return {k: v.numpy() for k, v in flow.get_all_variables().items()}


def test_the_switch_reaches_the_job_and_checks_its_argument():
    cfg = flow.function_config()
    assert cfg.enable_auto_mixed_precision_ is False
    cfg.enable_auto_mixed_precision()  # v0.4's default: True
    assert cfg.enable_auto_mixed_precision_ is True
    cfg.enable_auto_mixed_precision(False)
    assert cfg.enable_auto_mixed_precision_ is False
    with pytest.raises(TypeError, match="enable_auto_mixed_precision expects a bool, got 'yes'"):
        cfg.enable_auto_mixed_precision("yes")
    cfg.enable_auto_mixed_precision(1)  # pybind11's conversion into the job conf's bool: numbers, None as False
    assert cfg.enable_auto_mixed_precision_ is True
    cfg.enable_auto_mixed_precision(None)
    assert cfg.enable_auto_mixed_precision_ is False
    assert "enable_auto_mixed_precision" not in cfg.ignored


def test_the_first_layer_and_the_last_matmul_compute_in_float16_on_a_gpu(gpu):
    step = _jobs("gpu")
    step(X, LABELS)
    job = _job()
    assert job.amp is flow.float16 and job.amp_rules is amp_lists.V04
    ops = {op.name: op for op in job.ops}
    forward = [op for op in job.ops if op.section == "forward"]
    # the first dense layer (matmul, bias add, relu: fused or not) lies between two matmuls: float16
    first = [op for op in forward if op.name.startswith("h-") and op.type != "variable" and op.type != "cast"]
    assert first and all(_dtypes(op) == [F16_NAME] for op in first), [(op.name, _dtypes(op)) for op in first]
    assert _dtypes(ops["o-matmul"]) == [F16_NAME]
    # after the last white op nothing white follows: the second bias add, the cross entropy, the mean in float32
    assert _dtypes(ops["o-bias_add"]) == [F32_NAME]
    assert ops["o-bias_add"].inputs[0].op.name == "o-matmul-out-cast_h2f"
    ce = [op for op in forward if op.type == "sparse_softmax_cross_entropy"]
    assert len(ce) == 1 and _dtypes(ce[0]) == [F32_NAME] * 2
    # one cast per blob, named as OneFlow names it (`<lbn with '-'>-cast_f2h`), right after its producer
    casts = {op.name: str(op.outputs[0].meta.dtype) for op in forward if op.type == "cast"}
    assert casts == {"Input_0-out-cast_f2h": F16_NAME, "h-weight-out-cast_f2h": F16_NAME,
                     "h-bias-out-cast_f2h": F16_NAME, "o-weight-out-cast_f2h": F16_NAME,
                     "o-matmul-out-cast_h2f": F32_NAME}  # none on the labels or the second bias
    for name in casts:
        k = job.ops.index(ops[name])
        assert job.ops[k - 1] is ops[name].inputs[0].op
    # the backward follows the forward's dtypes: its products in float16
    products = [op for op in job.ops if op.section == "backward" and op.type in ("matmul", "matmul_relu_grad")]
    assert len(products) == 3 and all(_dtypes(op) == [F16_NAME] for op in products)
    # the variables, their gradients as the optimizer reads them and the optimizer in float32
    for op in job.ops:
        if op.type == "variable":
            assert _dtypes(op) != [F16_NAME], op.name
        if op.section == "optimizer":
            assert all(str(x.meta.dtype) != F16_NAME for x in op.inputs), op.name
    assert {k: v.dtype for k, v in _variables().items() if k in VALUES} == {k: F32 for k in VALUES}


def test_the_forward_numbers_are_float16_where_the_pass_casts(gpu):
    step = _jobs("gpu", train=False)
    got = step(X, LABELS)
    assert got.dtype == F32  # a white op's output comes back in float32
    ref = _forward()
    # the last product is a float16 number (a float32 computation would not be): got - bias recovers it
    product = got - B2
    np.testing.assert_allclose(product, product.astype(F16).astype(F32), rtol=0, atol=1e-6)
    # equal to the reference up to the order a device sums a product in: one float16 step at most
    step16 = np.spacing(np.abs(ref["product"])).astype(F32) * 1.001 + 1e-7
    assert np.all(np.abs(got - ref["logits"]) <= step16)
    logits32 = np.maximum(X @ W1.T + B1, 0) @ W2.T + B2  # which float32 numbers would not be
    assert not np.all(np.abs(logits32 - ref["logits"]) <= step16)


def test_a_training_step_updates_float32_variables_from_float16_gradients(gpu):
    lr = 0.5
    step = _jobs("gpu", lr=lr)
    loss = step(X, LABELS)
    np.testing.assert_allclose(float(loss[0]), _forward()["loss"], rtol=2e-3)
    got = _variables()
    want16, want32 = _grads16(), _grads32()
    for name, w0 in VALUES.items():
        assert got[name].dtype == F32
        g = (w0 - got[name]).astype(np.float64) / lr  # the gradient the update applied
        ref = want16[name].astype(np.float64)
        np.testing.assert_allclose(g, ref, rtol=0, atol=0.01 * np.abs(ref).max() + 1e-7, err_msg=name)
        if name != "o-bias":  # computed in float16: read back, the gradient lies on float16's grid
            np.testing.assert_allclose(g, g.astype(F16).astype(np.float64), rtol=0, atol=2e-7, err_msg=name)
    # the float16 gradients are not the float32 ones
    assert max(np.abs(want16[k].astype(F32) - want32[k]).max() for k in VALUES) > 1e-5
    # a second step trains on from float32 variables
    second = step(X, LABELS)
    assert float(second[0]) < float(loss[0])
    assert all(v.dtype == F32 for v in _variables().values() if v.dtype.kind == "f")


def test_v04s_lists_put_sigmoid_between_two_matmuls_in_float16(gpu):
    # sigmoid is gray on v0.4's lists (on none of 0.9's): between two white ops it computes in float16, and its
    # gradient, built from the float16 forward, too
    _jobs("gpu", activation=flow.math.sigmoid)(X, LABELS)
    job = _job()
    sigmoid = [op for op in job.ops if op.section == "forward" and op.name == "h-activation"]
    assert len(sigmoid) == 1 and _dtypes(sigmoid[0]) == [F16_NAME]
    grads = [op for op in job.ops if op.section == "backward" and op.type == "sigmoid_grad"]
    assert len(grads) == 1 and _dtypes(grads[0]) == [F16_NAME]
    # 0.9's rules on the same forward leave it in float32
    flow.clear_default_session()
    flow.config.gpu_device_num(1)

    @flow.global_function(type="predict")
    def forward(x: tp.Numpy.Placeholder((3, 4))) -> tp.Numpy:
        return _mlp(x, flow.math.sigmoid)

    traced = trace.trace_job(default_session(), default_session().job_functions["forward"])
    white09 = {op.name for op in amp.white_set(traced, amp_lists.V09)}
    white04 = {op.name for op in amp.white_set(traced, amp_lists.V04)}
    assert white04 == {"h-matmul", "h-bias_add", "h-activation", "o-matmul"}
    assert white09 == {"h-matmul", "o-matmul"}


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")  # the overflow is the subject
def test_dynamic_loss_scaling_skips_the_steps_whose_float16_gradients_overflow(gpu):
    # v0.4's default dynamic loss scale starts at 2**30: the scaled float16 gradients overflow, the step is skipped
    # and the scale halves, until they fit (as a v0.4 user on a GPU saw); with a scale that fits, the step applies
    # the unscaled gradient
    policy = flow.optimizer.loss_scale.dynamic_loss_scale(initial_loss_scale=2.0 ** 30, increment_period=2000)
    step = _jobs("gpu", loss_scale_policy=policy)
    step(X, LABELS)
    got = _variables()
    for name, w0 in VALUES.items():
        np.testing.assert_array_equal(got[name], w0, err_msg=name)  # skipped
    scale = [v for k, v in got.items() if k.endswith("LossScale")]
    assert len(scale) == 1 and float(scale[0][0]) == 2.0 ** 29

    lr, s = 0.5, 2.0 ** 8
    policy = flow.optimizer.loss_scale.dynamic_loss_scale(initial_loss_scale=s, increment_period=2000)
    step = _jobs("gpu", lr=lr, loss_scale_policy=policy)
    step(X, LABELS)
    got = _variables()
    want = _grads16(scale=s)
    for name, w0 in VALUES.items():
        g = (w0 - got[name]).astype(np.float64) * s / lr  # the scaled gradient the update applied
        ref = want[name].astype(np.float64)
        np.testing.assert_allclose(g, ref, rtol=0, atol=0.01 * np.abs(ref).max(), err_msg=name)


def _cnn_losses(amp_on, steps=3):
    """A legacy conv / batch norm / relu / max pool / dense classifier trained with Adam on one GPU."""
    flow.clear_default_session()
    flow.config.gpu_device_num(1)

    @flow.global_function(type="train", function_config=_config(amp_on))
    def step(x: tp.Numpy.Placeholder((4, 2, 8, 8)), y: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.conv2d(x, 4, 3, padding="SAME", name="c1")
        h = flow.nn.relu(flow.layers.batch_normalization(h, axis=1, name="bn"))
        h = flow.reshape(flow.nn.max_pool2d(h, 2, 2, "VALID"), (4, -1))
        logits = flow.layers.dense(h, 3, name="d")
        loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.01])).minimize(loss)
        return loss

    rng = np.random.default_rng(5)
    flow.load_variables({"c1-weight": (rng.standard_normal((4, 2, 3, 3)) * 0.3).astype(F32),
                         "c1-bias": (rng.standard_normal(4) * 0.1).astype(F32),
                         "d-weight": (rng.standard_normal((3, 64)) * 0.2).astype(F32),
                         "d-bias": np.zeros(3, F32)})
    x = rng.standard_normal((4, 2, 8, 8)).astype(F32)
    y = np.array([0, 1, 2, 1], np.int32)
    losses = [float(step(x, y)[0]) for _ in range(steps)]
    return losses, _job(), _variables()


def test_a_convolutional_network_with_batch_normalization_trains_in_mixed_precision(gpu):
    plain, _, _ = _cnn_losses(False)
    mixed, job, variables = _cnn_losses(True)
    ops = {op.name: op for op in job.ops}
    forward = [op for op in job.ops if op.section == "forward"]
    # conv (white) to dense (white): the conv's bias add, the batch normalization (v0.4's gray `normalization`),
    # relu, max pool and reshape (clear) between them compute in float16
    between = [op for op in forward if op.name.startswith("c1") and op.type not in ("variable", "cast")]
    between += [ops["bn"]] + [op for op in forward if op.type in ("relu", "max_pool2d", "reshape")]
    assert len(between) >= 5 and all(_dtypes(op) == [F16_NAME] for op in between), [
        (op.name, _dtypes(op)) for op in between]
    # its batch statistics read the input in float32 (a cast back), its statistics inputs and parameters are never
    # cast (v0.4's no-cast registry), the moving statistics stay float32
    stats = [op for op in forward if op.type in ("channel_sum", "centered_square_sum")]
    assert len(stats) == 2 and all(str(op.inputs[0].meta.dtype) == F32_NAME for op in stats)
    assert stats[0].inputs[0].op.name.endswith("-cast_h2f")
    assert [str(x.meta.dtype) for x in ops["bn"].inputs] == [F16_NAME] + [F32_NAME] * 4
    assert not any(op.name.startswith("bn-") and op.name.endswith("-cast_f2h") for op in forward)
    assert all(variables[k].dtype == F32 for k in ("bn-gamma", "bn-beta", "bn-moving_mean", "bn-moving_variance"))
    # the backward of the batch normalization in float16 too, from the float16 forward
    grads = [op for op in job.ops if op.section == "backward" and op.type == "normalization_batch_stats_grad"]
    assert len(grads) == 1 and _dtypes(grads[0]) == [F16_NAME]
    # the same training, to float16's precision; and it learns
    np.testing.assert_allclose(mixed, plain, rtol=1e-2)
    assert mixed[-1] < mixed[0] and mixed != plain


def _data_parallel(devices_n):
    flow.clear_default_session()
    flow.config.gpu_device_num(devices_n)
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((8, 4)).astype(F32), rng.integers(0, 3, 8).astype(np.int32)

    @flow.global_function(type="train", function_config=_config())
    def step(x: tp.Numpy.Placeholder((8, 4)), y: tp.Numpy.Placeholder((8,), dtype=flow.int32)) -> tp.Numpy:
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, _mlp(x))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(loss)
        return loss

    flow.load_variables(dict(VALUES))
    losses = [step(x, y) for _ in range(2)]
    return losses, _variables(), _job()


def test_data_parallel_devices_all_reduce_float32_gradients_and_train_as_one_device(gpu):
    one_losses, one, _ = _data_parallel(1)
    two_losses, two, job = _data_parallel(2)
    # each device's weight gradient is its half batch's float16 product, cast to float32 before the all-reduce
    # (the gradient of the weight's `-cast_f2h`, which reads it as it lies), so the all-reduce sums float32 partial sums
    boxings = [op for op in job.ops if op.defn.boxing and op.section == "optimizer"]
    assert len(boxings) == 4 and all(_dtypes(op) == [F32_NAME] for op in boxings)
    # the same training to float16's precision: not bit for bit, as each half batch's product is rounded alone
    for a, b in zip(one_losses, two_losses):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=1e-4)
    for name in VALUES:
        np.testing.assert_allclose(two[name], one[name], rtol=0, atol=2e-3 * np.abs(one[name]).max(), err_msg=name)
        assert np.abs(one[name] - VALUES[name]).max() > 1e-3  # it trained


@pytest.mark.cpu_only("its subject is a CPU placement, which the gpu suite puts on the GPU")
def test_a_cpu_job_is_left_as_it_is_bit_for_bit():
    # OneFlow's pass casts the ops of GPU placements alone (MakePredicatorIsAllowedToRunWithHalf @ v0.4.0)
    runs = {}
    for amp_on in (False, True):
        step = _jobs("cpu", amp_on=amp_on)
        losses = [step(X, LABELS) for _ in range(2)]
        ops = [(op.name, op.type, _dtypes(op)) for op in _job().ops]
        runs[amp_on] = losses, _variables(), ops
    (l0, v0, ops0), (l1, v1, ops1) = runs[False], runs[True]
    assert ops1 == ops0
    assert not any(F16_NAME in d for _, _, ds in ops1 for d in ds)
    for a, b in zip(l0, l1):
        np.testing.assert_array_equal(a, b)
    assert v0.keys() == v1.keys()
    for k in v0:
        np.testing.assert_array_equal(v0[k], v1[k], err_msg=k)


def test_a_float64_default_data_type_is_refused_on_a_gpu_as_v04_checked(gpu):
    flow.clear_default_session()
    flow.config.gpu_device_num(1)
    cfg = _config()
    cfg.default_data_type(flow.float64)

    @flow.global_function(type="predict", function_config=cfg)
    def forward(x: tp.Numpy.Placeholder((3, 4), dtype=flow.float64)) -> tp.Numpy:
        return _mlp(x)

    with pytest.raises(ValueError, match="job 'forward': enable_auto_mixed_precision needs "
                                         r"function_config.default_data_type\(flow.float\)"):
        forward(X.astype(np.float64))


def test_legacy_eager_mode_runs_no_job_pass(gpu):
    # v0.4's eager build context ran no AutoMixedPrecision (EagerJobBuildAndInferCtx::Complete @ v0.4.0): a train
    # step in eager mode computes in float32 (its backward and update are compiled from the traced job)
    flow.clear_default_session()
    flow.enable_eager_execution(True)
    try:
        flow.config.gpu_device_num(1)

        @flow.global_function(type="train", function_config=_config())
        def step(x: tp.Numpy.Placeholder((3, 4)), y: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> tp.Numpy:
            w = flow.get_variable("w", shape=(3, 4), initializer=flow.constant_initializer(0.0))
            logits = flow.matmul(x, w, transpose_b=True)
            loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(loss)
            return loss

        step(X, LABELS)
        w = flow.get_all_variables()["w"].numpy()
    finally:
        flow.enable_eager_execution(False)
    onehot = np.zeros((3, 3), F32)
    onehot[np.arange(3), LABELS] = 1
    want = -((np.full((3, 3), 1 / 3, F32) - onehot) / 3).T @ X  # one float32 step from zero logits
    assert w.dtype == F32
    np.testing.assert_allclose(w, want, rtol=1e-6, atol=1e-7)
    assert np.abs(want - want.astype(F16).astype(F32)).max() > 1e-6  # float16 numbers would differ
