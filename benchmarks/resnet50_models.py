"""ResNet-50 (v1.5: stride on the 3x3 convolution of a bottleneck, as OneFlow-Benchmark's
`Classification/cnns/resnet_model.py` and torchvision) twice: as a legacy `@flow.global_function` job and as a
PyTorch eager functional model that reads the same weights by the same variable names.

The convolutions take explicit symmetric padding (k // 2 on each side) so that PyTorch computes the same
function; OneFlow's "SAME" would put the odd cell of a stride-2 window on one side only. Batch normalization is
in training mode on both sides (batch statistics, moving averages updated with momentum 0.9), SGD with momentum
0.9 at a constant learning rate (OneFlow's momentum update v = m v - lr g, w += v is torch's v = m v + g,
w -= lr v for a constant lr)."""
import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp

BLOCKS = ((3, 256, 64, 1), (4, 512, 128, 2), (6, 1024, 256, 2), (3, 2048, 512, 2))
LR, MOMENTUM, BN_MOMENTUM, EPS = 0.01, 0.9, 0.9, 1e-5


def _conv(name, x, filters, k, stride):
    w = flow.get_variable(name + "-weight", shape=(filters, x.shape[1], k, k),
                          initializer=flow.variance_scaling_initializer(2, "fan_in", "random_normal"))
    p = k // 2
    return flow.nn.conv2d(x, w, stride, [[0, 0], [0, 0], [p, p], [p, p]], "NCHW", 1, name=name)


def _bn(name, x, last=False):
    init = flow.zeros_initializer() if last else flow.ones_initializer()
    return flow.layers.batch_normalization(x, axis=1, momentum=BN_MOMENTUM, epsilon=EPS, gamma_initializer=init,
                                           name=name)


def resnet50(images, classes=1000):
    x = flow.nn.relu(_bn("conv1_bn", _conv("conv1", images, 64, 7, 2)))
    x = flow.nn.max_pool2d(x, 3, 2, [[0, 0], [0, 0], [1, 1], [1, 1]], name="pool1")
    for s, (count, filters, inner, stride) in enumerate(BLOCKS):
        for i in range(count):
            name, st = "res%d_%d" % (s + 2, i), stride if i == 0 else 1
            if i == 0:
                shortcut = _bn(name + "_branch1_bn", _conv(name + "_branch1", x, filters, 1, st))
            else:
                shortcut = x
            a = flow.nn.relu(_bn(name + "_branch2a_bn", _conv(name + "_branch2a", x, inner, 1, 1)))
            b = flow.nn.relu(_bn(name + "_branch2b_bn", _conv(name + "_branch2b", a, inner, 3, st)))
            c = _bn(name + "_branch2c_bn", _conv(name + "_branch2c", b, filters, 1, 1), last=True)
            x = flow.nn.relu(c + shortcut)
    x = flow.nn.avg_pool2d(x, 7, 1, "VALID", name="pool5")
    return flow.layers.dense(flow.reshape(x, (x.shape[0], -1)), classes,
                             kernel_initializer=flow.truncated_normal(0.01), name="fc1001")


def oneflow_step(batch_size=8, size=224, classes=1000):
    """A fresh session with the ResNet-50 train job; returns (step(), images, labels, variables())."""
    flow.clear_default_session()
    flow.config.cpu_device_num(1)
    config = flow.FunctionConfig()
    config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=config)
    def resnet50_train(images: tp.Numpy.Placeholder((batch_size, 3, size, size)),
                       labels: tp.Numpy.Placeholder((batch_size,), dtype=flow.int32)) -> tp.Numpy:
        loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(
            labels, resnet50(images, classes)))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=MOMENTUM).minimize(loss)
        return loss

    r = np.random.default_rng(0)
    x = r.standard_normal((batch_size, 3, size, size), dtype=np.float32)
    y = r.integers(0, classes, batch_size).astype(np.int32)

    def variables():
        return {k: v.numpy() for k, v in flow.get_all_variables().items()}
    return (lambda: resnet50_train(x, y)), x, y, variables


def torch_step(values, x, y):
    """PyTorch eager on the weights `values` ({variable name: array}, from `oneflow_step`'s variables())."""
    import torch
    import torch.nn.functional as F

    p = {k: torch.tensor(v) for k, v in values.items() if v.dtype == np.float32}
    trainable = [t for k, t in p.items() if not k.endswith(("moving_mean", "moving_variance"))]
    for t in trainable:
        t.requires_grad_(True)
    opt = torch.optim.SGD(trainable, lr=LR, momentum=MOMENTUM)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))

    def conv(name, h, stride):
        w = p[name + "-weight"]
        return F.conv2d(h, w, stride=stride, padding=w.shape[-1] // 2)

    def bn(name, h):
        return F.batch_norm(h, p[name + "-moving_mean"], p[name + "-moving_variance"], p[name + "-gamma"],
                            p[name + "-beta"], training=True, momentum=1 - BN_MOMENTUM, eps=EPS)

    def forward(h):
        h = F.max_pool2d(F.relu(bn("conv1_bn", conv("conv1", h, 2))), 3, 2, 1)
        for s, (count, _, _, stride) in enumerate(BLOCKS):
            for i in range(count):
                name, st = "res%d_%d" % (s + 2, i), stride if i == 0 else 1
                shortcut = bn(name + "_branch1_bn", conv(name + "_branch1", h, st)) if i == 0 else h
                a = F.relu(bn(name + "_branch2a_bn", conv(name + "_branch2a", h, 1)))
                b = F.relu(bn(name + "_branch2b_bn", conv(name + "_branch2b", a, st)))
                h = F.relu(bn(name + "_branch2c_bn", conv(name + "_branch2c", b, 1)) + shortcut)
        h = F.avg_pool2d(h, 7, 1).reshape(h.shape[0], -1)
        return F.linear(h, p["fc1001-weight"], p["fc1001-bias"])  # flow.layers.dense keeps (units, inputs)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(forward(xt), yt)
        loss.backward()
        opt.step()
        return loss.detach().numpy()
    return step, p
