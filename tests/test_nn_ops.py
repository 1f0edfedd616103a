"""The nn ops through the public API: a LeNet-shaped network (conv 32 5x5 SAME, max pool, conv 64, max pool,
dense 512, dense 10, sparse softmax cross entropy) trained one SGD step against the same network in torch, the
pooling/padding variants and the losses against torch, and dropout (kept fraction, legacy scaling, per-call masks,
identical numbers on 1, 2 and 3 devices)."""
import functools

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.ops.nn_ops  # noqa: F401  (registers the nn ops)
import oneflow_compat.typing as tp

BATCH, LR = 4, 0.1


@functools.lru_cache(maxsize=None)
def _lenet_weights_cached(dtype):
    r = np.random.default_rng(11)

    def uniform(shape, fan_in):
        bound = 1.0 / np.sqrt(fan_in)
        return r.uniform(-bound, bound, shape).astype(dtype)

    return {"conv1-weight": uniform((32, 1, 5, 5), 25), "conv1-bias": uniform((32,), 25),
            "conv2-weight": uniform((64, 32, 5, 5), 800), "conv2-bias": uniform((64,), 800),
            "dense1-weight": uniform((512, 7 * 7 * 64), 3136), "dense1-bias": uniform((512,), 3136),
            "dense2-weight": uniform((10, 512), 512), "dense2-bias": uniform((10,), 512)}


def _lenet_weights(dtype):
    return {k: v.copy() for k, v in _lenet_weights_cached(dtype).items()}


def _lenet_data(dtype):
    r = np.random.default_rng(5)
    return r.random((BATCH, 1, 28, 28)).astype(dtype), r.integers(0, 10, BATCH).astype(np.int32)


def _flow_lenet_step(dtype):
    """One train call: returns (loss per example, {name: weight after the SGD step})."""
    fdt = flow.float if dtype == np.float32 else flow.double

    @flow.global_function(type="train")
    def train(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=fdt),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        conv1 = flow.layers.conv2d(images, 32, 5, padding="SAME", activation=flow.nn.relu, name="conv1")
        pool1 = flow.nn.max_pool2d(conv1, ksize=2, strides=2, padding="SAME", name="pool1")
        conv2 = flow.layers.conv2d(pool1, 64, 5, padding="SAME", activation=flow.nn.relu, name="conv2")
        pool2 = flow.nn.max_pool2d(conv2, ksize=2, strides=2, padding="SAME", name="pool2")
        flat = flow.reshape(pool2, [pool2.shape[0], -1])
        hidden = flow.layers.dense(flat, 512, activation=flow.nn.relu, name="dense1")
        logits = flow.layers.dense(hidden, 10, name="dense2")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=0).minimize(loss)
        return loss

    flow.load_variables(_lenet_weights(dtype))
    loss = train(*_lenet_data(dtype))
    return loss, {k: v.numpy() for k, v in flow.get_all_variables().items() if k in _lenet_weights(dtype)}


def _torch_lenet_step(torch, dtype):
    F = torch.nn.functional
    w = {k: torch.tensor(v, requires_grad=True) for k, v in _lenet_weights(dtype).items()}
    images, labels = (torch.tensor(a) for a in _lenet_data(dtype))
    h = F.max_pool2d(F.relu(F.conv2d(images, w["conv1-weight"], w["conv1-bias"], padding=2)), 2, 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, w["conv2-weight"], w["conv2-bias"], padding=2)), 2, 2)
    h = F.relu(F.linear(h.reshape(BATCH, -1), w["dense1-weight"], w["dense1-bias"]))
    logits = F.linear(h, w["dense2-weight"], w["dense2-bias"])
    per_example = F.cross_entropy(logits, labels.long(), reduction="none")
    per_example.mean().backward()  # legacy scaling: gradients of the summed loss / its 4 instances
    lr = float(np.float32(LR))  # the legacy learning rate is a float32 blob, also for float64 variables
    return per_example.detach().numpy(), {k: (v - lr * v.grad).detach().numpy() for k, v in w.items()}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lenet_one_sgd_step_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    loss, weights = _flow_lenet_step(dtype)
    ref_loss, ref_weights = _torch_lenet_step(torch, dtype)
    assert loss.shape == (BATCH,) and loss.dtype == dtype
    tight = dtype == np.float64
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-12 if tight else 1e-5)
    start = _lenet_weights(dtype)
    for name, ref in ref_weights.items():
        # relative to the tensor's scale: single elements near 0 carry float32 rounding of the largest terms
        np.testing.assert_allclose(weights[name], ref, rtol=0, atol=(1e-12 if tight else 1e-5) * np.abs(ref).max(),
                                   err_msg=name)
        # the step itself (much smaller than the weights) must match too
        step, ref_step = start[name] - weights[name], start[name] - ref
        assert np.any(step != 0), name
        scale = float(np.max(np.abs(ref_step)))
        np.testing.assert_allclose(step, ref_step, rtol=1e-9 if tight else 2e-3, atol=(1e-9 if tight else 2e-3)
                                   * scale, err_msg=name)


def _predict(fn, *arrays):
    """Runs `fn(*blobs)` in a predict job fed with `arrays` (float64 unless integer)."""
    def ph(a):
        return tp.Numpy.Placeholder(a.shape, dtype=flow.double if a.dtype == np.float64 else flow.int32)

    if len(arrays) == 1:
        @flow.global_function()
        def job(a: ph(arrays[0])) -> tp.Numpy:
            return fn(a)
    else:
        @flow.global_function()
        def job(a: ph(arrays[0]), b: ph(arrays[1])) -> tp.Numpy:
            return fn(a, b)
    return job(*arrays)


@pytest.mark.parametrize("padding,ceil_mode", [("VALID", False), ("SAME", False), ("VALID", True)])
def test_pools_match_torch(padding, ceil_mode):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = np.random.default_rng(1).standard_normal((2, 3, 7, 8))

    def run(name):
        flow.clear_default_session()
        fn = getattr(flow.nn, name)
        return _predict(lambda a: fn(a, ksize=3, strides=2, padding=padding, ceil_mode=ceil_mode), x)

    mx, av = run("max_pool2d"), run("avg_pool2d")
    t = torch.tensor(x)
    if padding == "SAME":
        # 7 -> out 4, need (4-1)*2+3-7 = 2 -> (1, 1); 8 -> out 4, need 1 -> SAME_LOWER puts it before: (1, 0)
        t_max = F.pad(t, (1, 0, 1, 1), value=-np.inf)
        ref_max = F.max_pool2d(t_max, 3, 2)
        ones = F.pad(torch.ones_like(t), (1, 0, 1, 1))
        ref_avg = F.avg_pool2d(F.pad(t, (1, 0, 1, 1)), 3, 2) / F.avg_pool2d(ones, 3, 2)  # divisor: real cells
    else:
        ref_max = F.max_pool2d(t, 3, 2, ceil_mode=ceil_mode)
        ref_avg = F.avg_pool2d(t, 3, 2, ceil_mode=ceil_mode, count_include_pad=False)
    np.testing.assert_allclose(mx, ref_max.numpy(), rtol=1e-14)
    np.testing.assert_allclose(av, ref_avg.numpy(), rtol=1e-12)


def test_conv2d_same_upper_nhwc_and_groups_match_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    r = np.random.default_rng(2)
    x = r.standard_normal((2, 6, 7, 4))  # NHWC
    w = r.standard_normal((4, 3, 2, 4))  # (F, kh, kw, C)
    y = _predict(lambda a, b: flow.nn.conv2d(a, b, strides=2, padding="SAME_UPPER", data_format="NHWC"), x, w)
    # 6 -> out 3, need (3-1)*2+3-6 = 1; 7 -> out 4, need (4-1)*2+2-7 = 1: SAME_UPPER puts both after
    t = F.pad(torch.tensor(x).permute(0, 3, 1, 2), (0, 1, 0, 1))
    ref = F.conv2d(t, torch.tensor(w).permute(0, 3, 1, 2), stride=2).permute(0, 2, 3, 1)
    np.testing.assert_allclose(y, ref.numpy(), rtol=1e-12, atol=1e-12)

    flow.clear_default_session()
    x = r.standard_normal((2, 4, 5, 5))
    w = r.standard_normal((6, 2, 3, 3))
    y = _predict(lambda a, b: flow.nn.conv2d(a, b, strides=1, padding="VALID", dilations=2, groups=2), x, w)
    ref = F.conv2d(torch.tensor(x), torch.tensor(w), dilation=2, groups=2)
    np.testing.assert_allclose(y, ref.numpy(), rtol=1e-12, atol=1e-12)


def test_dense_and_sigmoid_cross_entropy_match_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    r = np.random.default_rng(4)
    logits = r.standard_normal((5, 7)) * 4
    p = r.random((5, 7))
    p /= p.sum(axis=1, keepdims=True)
    ce = _predict(lambda a, b: flow.nn.softmax_cross_entropy_with_logits(labels=b, logits=a), logits, p)
    ref = -(torch.tensor(p) * F.log_softmax(torch.tensor(logits), dim=1)).sum(dim=1)
    np.testing.assert_allclose(ce, ref.numpy(), rtol=1e-12)
    flow.clear_default_session()
    z = r.random((5, 7))
    sce = _predict(lambda a, b: flow.nn.sigmoid_cross_entropy_with_logits(labels=b, logits=a), logits, z)
    ref = F.binary_cross_entropy_with_logits(torch.tensor(logits), torch.tensor(z), reduction="none")
    np.testing.assert_allclose(sce, ref.numpy(), rtol=1e-12)


# --- dropout ------------------------------------------------------------------------------------------------------
SHAPE = (12, 50)


def _raw_dropout(x, rate, seed, name):
    """Output 0 of the dropout op itself (output 1 is the mask)."""
    from oneflow_compat.ops.registry import apply

    return apply("dropout", [x], {"rate": float(rate), "seed": seed}, name=name)[0]


def _dropout_calls(devices, rate, calls=2, seed=3, x=None, dropout=flow.nn.dropout):
    """Outputs of `calls` train calls of y = dropout(x + v) (v a zero variable: the job trains something)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    x = np.ones(SHAPE) if x is None else x

    @flow.global_function(type="train")
    def train(a: tp.Numpy.Placeholder(SHAPE, dtype=flow.double)) -> tp.Numpy:
        v = flow.get_variable("v", shape=SHAPE, dtype=flow.double, initializer=flow.zeros_initializer())
        y = dropout(a + v, rate=rate, seed=seed, name="drop")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(y)
        return y

    return [train(x) for _ in range(calls)]


def test_dropout_keeps_about_one_minus_rate_and_scales_the_kept():
    rate = 0.3
    outs = _dropout_calls(1, rate, calls=4)
    for y in outs:
        kept = y != 0
        np.testing.assert_allclose(y[kept], 1.0 / (1 - rate), rtol=1e-15)
        # 600 Bernoulli(0.7) draws: the kept fraction is within 5 standard deviations (0.019 each)
        assert abs(kept.mean() - (1 - rate)) < 5 * np.sqrt(rate * (1 - rate) / kept.size)
    masks = [y != 0 for y in outs]
    assert not any(np.array_equal(masks[0], m) for m in masks[1:]), "the mask must change from call to call"


@pytest.mark.parametrize("devices", [2, 3])
def test_dropout_same_numbers_on_any_device_count(devices):
    x = np.random.default_rng(0).standard_normal(SHAPE)
    ref = _dropout_calls(1, 0.4, calls=3, x=x)
    got = _dropout_calls(devices, 0.4, calls=3, x=x)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)


def test_dropout_seed_decides_the_mask():
    same = _dropout_calls(1, 0.5, seed=9)
    again = _dropout_calls(1, 0.5, seed=9)
    other = _dropout_calls(1, 0.5, seed=10)
    for a, b in zip(same, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(same[0], other[0])


def test_dropout_without_seed_depends_on_the_root_seed(monkeypatch):
    def run(root):
        monkeypatch.setenv("ONEFLOW_COMPAT_SEED", str(root))
        return _dropout_calls(1, 0.5, seed=None, calls=1)[0]

    a, b, c = run(1), run(1), run(2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_dropout_is_identity_in_predict_jobs():
    x = np.random.default_rng(1).standard_normal(SHAPE)
    y = _predict(lambda a: flow.nn.dropout(a, rate=0.5), x)
    np.testing.assert_array_equal(y, x)


def test_public_dropout_in_a_train_job_returns_the_op_output():
    ref = _dropout_calls(1, 0.3, calls=1, dropout=_raw_dropout)
    got = _dropout_calls(1, 0.3, calls=1)
    np.testing.assert_array_equal(got[0], ref[0])


def test_dropout_in_eager_mode_draws_per_call_and_trains_with_that_mask():
    flow.enable_eager_execution(True)
    x = np.ones((4, 6))

    @flow.global_function(type="train")
    def train(a: tp.Numpy.Placeholder((4, 6), dtype=flow.double)) -> tp.Numpy:
        v = flow.get_variable("v", shape=(4, 6), dtype=flow.double, initializer=flow.zeros_initializer())
        y = flow.nn.dropout(a + v, rate=0.5, seed=1, name="d")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(y)
        return y

    y1 = train(x)
    y2 = train(x)
    assert not np.array_equal(y1 != 0, y2 != 0)
    # v moved by -lr * (mask / (1 - rate)) / 24 per call (loss of 24 elements), with each call's own mask
    v = flow.get_all_variables()["v"].numpy()
    kept = (y1 != 0).astype(np.float64) + (y2 != 0)
    np.testing.assert_allclose(v, -kept * 2.0 / 24, rtol=1e-15)


def test_dropout_in_mirrored_view_scales_each_device_piece():
    flow.config.cpu_device_num(2)
    cfg = flow.function_config()
    cfg.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(type="train", function_config=cfg)
    def train(a: tp.ListNumpy.Placeholder((30, 6), dtype=flow.double)) -> tp.ListNumpy:
        v = flow.get_variable("v", shape=(1, 6), dtype=flow.double, initializer=flow.zeros_initializer())
        y = flow.nn.dropout(a + v, rate=0.25, seed=5, name="d")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(y)
        return y

    pieces = train([np.ones((30, 6)), np.ones((20, 6))])  # a dynamic batch: 30 and 20 rows
    assert [p.shape for p in pieces] == [(30, 6), (20, 6)]
    for p in pieces:
        np.testing.assert_allclose(p[p != 0], 1 / 0.75, rtol=1e-15)
        assert 0.5 < np.mean(p != 0) < 0.95
    assert not np.array_equal(pieces[0][:20] != 0, pieces[1] != 0), "devices draw independent masks"
