"""The docs' MLP and LeNet train jobs, shared by the benchmarks."""
import time

import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp

B = 100


def lenet(data, train=False):
    initializer = flow.truncated_normal(0.1)
    conv1 = flow.layers.conv2d(data, 32, 5, padding="SAME", activation=flow.nn.relu, name="conv1",
                               kernel_initializer=initializer)
    pool1 = flow.nn.max_pool2d(conv1, ksize=2, strides=2, padding="SAME", name="pool1", data_format="NCHW")
    conv2 = flow.layers.conv2d(pool1, 64, 5, padding="SAME", activation=flow.nn.relu, name="conv2",
                               kernel_initializer=initializer)
    pool2 = flow.nn.max_pool2d(conv2, ksize=2, strides=2, padding="SAME", name="pool2", data_format="NCHW")
    reshape = flow.reshape(pool2, [pool2.shape[0], -1])
    hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, kernel_initializer=initializer, name="dense1")
    if train:
        hidden = flow.nn.dropout(hidden, rate=0.5, name="dropout")
    return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="dense2")


def mlp(data):
    reshape = flow.reshape(data, [data.shape[0], -1])
    hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, name="dense1",
                               kernel_initializer=flow.truncated_normal(0.1))
    return flow.layers.dense(hidden, 10, name="dense2", kernel_initializer=flow.truncated_normal(0.1))


def make_train_step(model, devices=1):
    """A fresh session with the model's train job on `devices` devices per machine; returns step()."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((B, 1, 28, 28)),
                  labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        logits = model(images, True) if model is lenet else model(images)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    r = np.random.default_rng(0)
    x = r.random((B, 1, 28, 28), dtype=np.float32)
    y = r.integers(0, 10, B).astype(np.int32)
    return lambda: train_job(x, y)


def best_time(fn, steps, repeats=3, warmup=2):
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(steps):
            fn()
        best = min(best, (time.perf_counter() - t) / steps)
    return best
