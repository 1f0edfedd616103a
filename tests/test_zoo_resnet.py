"""OneFlow-Benchmark's ResNet-50 recipe (examples/zoo_resnet50.py: the zoo's layer names, SAME padding, batch norm in
training, L2 on weights and batch norm parameters, label smoothing, SGD with momentum after a linear warmup) at small
sizes: finite falling losses, 2 devices == 1 device over 5 steps, the same numbers as a PyTorch re-implementation on
the same weights, and the zoo's fused batch-norm layers (`--fuse_bn_relu`, `--fuse_bn_add_relu`) equal to the
unfused ones."""
import importlib.util
import os

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "zoo_resnet50.py")
_spec = importlib.util.spec_from_file_location("zoo_resnet50", EXAMPLE)
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)

B, SIZE, CLASSES, LR, STEPS = 4, 32, 10, 0.02, 5


def batches(n=STEPS):
    """Learnable data: one batch (each class a brightness offset on noise) seen at every step."""
    r = np.random.default_rng(0)
    y = r.integers(0, CLASSES, B).astype(np.int32)
    x = (r.standard_normal((B, 3, SIZE, SIZE)) * 0.5 + y[:, None, None, None] / 3.0).astype(np.float32)
    return [(x, y)] * n


def train(devices, fuse=False, steps=STEPS):
    """Losses of `steps` train steps on `devices` devices, and the initial and final variables."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    config = flow.FunctionConfig()
    config.default_data_type(flow.float)

    @flow.global_function("train", config)
    def resnet_train(images: tp.Numpy.Placeholder((B, 3, SIZE, SIZE)),
                     labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-%d" % (devices - 1)):
            logits = zoo.resnet50(images, CLASSES, fuse_bn_relu=fuse, fuse_bn_add_relu=fuse)
            return zoo.loss_and_optimizer(logits, labels, CLASSES, LR, 100, 3)

    init = {k: v.numpy().copy() for k, v in flow.get_all_variables().items()}
    losses = [float(resnet_train(x, y).mean()) for x, y in batches(steps)]
    final = {k: v.numpy().copy() for k, v in flow.get_all_variables().items()}
    return losses, init, final


@pytest.fixture(scope="module")
def one_device():
    return train(1)


def test_two_devices_equal_one(one_device):
    losses, init, final = one_device
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]
    losses2, init2, final2 = train(2)
    np.testing.assert_allclose(losses2, losses, rtol=1e-4)
    for name in ("Resnet-conv1-weight", "Resnet-res5_2_branch2c_bn-gamma", "Resnet-fc1001-weight"):
        np.testing.assert_array_equal(init2[name], init[name])  # initial values do not depend on the layout
        # float32 sums in another order: on GPU devices each device sums its half of the batch and an all-reduce
        # adds the halves (CPU devices of one process run one call on the whole batch, so there 2 == 1 exactly);
        # a zero-initialised batch-norm gamma (res5_2_branch2c) is all such sums: 5e-6 apart on the first GPU run
        # after a total change of 9e-4, hence the bound relative to what training changed
        change = float(np.max(np.abs(final[name] - init[name])))
        np.testing.assert_allclose(final2[name], final[name], rtol=1e-3, atol=max(1e-6, 1e-2 * change))


def test_fused_batch_norm_layers_equal_unfused(one_device):
    losses = train(1, fuse=True, steps=2)[0]
    np.testing.assert_allclose(losses, one_device[0][:2], rtol=1e-5)


def _same_pads(size, k, s):
    """OneFlow's "SAME" (SAME_LOWER): the odd padding cell before."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total - total // 2, total // 2


def test_same_numbers_as_torch(one_device):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    losses, init, _ = one_device
    p = {k: torch.tensor(v) for k, v in init.items() if v.dtype == np.float32 and not k.endswith("-momentum")}
    trainable = {k: t.requires_grad_(True) for k, t in p.items() if not k.endswith(("moving_mean", "moving_variance"))}
    velocity = {k: torch.zeros_like(t) for k, t in trainable.items()}

    def conv(name, h, k, s):
        w = p["Resnet-%s-weight" % name]
        if k > 1 or s > 1:
            top, bottom = _same_pads(h.shape[2], k, s)
            left, right = _same_pads(h.shape[3], k, s)
            h = F.pad(h, (left, right, top, bottom))
        return F.conv2d(h, w, stride=s)

    def bn(name, h):
        n = "Resnet-%s-" % name
        return F.batch_norm(h, p[n + "moving_mean"], p[n + "moving_variance"], p[n + "gamma"], p[n + "beta"],
                            training=True, momentum=0.1, eps=1e-5)

    def forward(h):
        h = F.relu(bn("conv1_bn", conv("conv1", h, 7, 2)))
        top, bottom = _same_pads(h.shape[2], 3, 2)
        h = F.max_pool2d(F.pad(h, (top, bottom, top, bottom), value=-np.inf), 3, 2)
        for i, count in enumerate(zoo.BLOCK_COUNTS):
            for j in range(count):
                blk, st = "res%d_%d" % (i + 2, j), (1 if i == 0 else 2) if j == 0 else 1
                short = bn(blk + "_branch1_bn", conv(blk + "_branch1", h, 1, st)) if j == 0 else h
                a = F.relu(bn(blk + "_branch2a_bn", conv(blk + "_branch2a", h, 1, 1)))
                b = F.relu(bn(blk + "_branch2b_bn", conv(blk + "_branch2b", a, 3, st)))
                h = F.relu(bn(blk + "_branch2c_bn", conv(blk + "_branch2c", b, 1, 1)) + short)
        h = h.mean(dim=(2, 3))
        return F.linear(h, p["Resnet-fc1001-weight"], p["Resnet-fc1001-bias"])

    got = []
    for step, (x, y) in enumerate(batches()):
        loss = F.cross_entropy(forward(torch.from_numpy(x)), torch.from_numpy(y.astype(np.int64)),
                               label_smoothing=0.1)
        for t in trainable.values():
            t.grad = None
        loss.backward()
        # OneFlow evaluates the decay at the train step itself (learning_rate_schedule_kernel.cpp)
        lr = LR * step / 3 if step < 3 else 0.5 * LR * (1 + np.cos(np.pi * step / 97))
        with torch.no_grad():
            for k, w in trainable.items():
                # L2 (1/32768) on conv weights, batch norm parameters and the dense layer; OneFlow's momentum
                # update v = 0.875 v - lr g, w += v
                velocity[k].mul_(0.875).sub_(lr * (w.grad + w / 32768.0))
                w.add_(velocity[k])
        got.append(float(loss.detach()))
    np.testing.assert_allclose(losses, got, rtol=1e-4)
