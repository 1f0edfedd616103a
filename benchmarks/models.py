"""The docs' MLP and LeNet train jobs, shared by the benchmarks.

`train_steps(model, device_counts)` defines one train job per device count in ONE session (each on its own
placement `0:0-(n-1)` and under its own namespace, so with its own variables), so that a benchmark can time the
configurations in turn inside one process."""
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


def mlp(data, train=False):
    reshape = flow.reshape(data, [data.shape[0], -1])
    hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, name="dense1",
                               kernel_initializer=flow.truncated_normal(0.1))
    return flow.layers.dense(hidden, 10, name="dense2", kernel_initializer=flow.truncated_normal(0.1))


def batch(batch_size=None, seed=0):
    b = B if batch_size is None else batch_size
    r = np.random.default_rng(seed)
    return r.random((b, 1, 28, 28), dtype=np.float32), r.integers(0, 10, b).astype(np.int32)


def _train_job(model, key, placement, batch_size):
    def train_job(images: tp.Numpy.Placeholder((batch_size, 1, 28, 28)),
                  labels: tp.Numpy.Placeholder((batch_size,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.namespace("p%d" % key):
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, model(images, True))
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    train_job.__name__ = "train_job_%d" % key
    config = flow.FunctionConfig()
    config.default_placement_scope(flow.scope.placement("cpu", placement))
    return flow.global_function(type="train", function_config=config)(train_job)


def train_steps(model, device_counts=(1,), batch_size=None, placements=None):
    """A fresh session with one train job of `model` per device count (on devices 0:0-(n-1)), or per entry of
    `placements` ({key: placement spec}, e.g. {1: "0:0", 2: ["0:0", "1:0"]} across MPI ranks); returns
    {count or key: step()}."""
    b = B if batch_size is None else batch_size
    flow.clear_default_session()
    if placements is None:
        flow.config.cpu_device_num(max(device_counts))
        placements = {n: "0:0-%d" % (n - 1) for n in device_counts}
    jobs = {k: _train_job(model, k, spec, b) for k, spec in placements.items()}
    x, y = batch(b)
    return {k: (lambda job=job: job(x, y)) for k, job in jobs.items()}


def make_train_step(model, devices=1, batch_size=None):
    return train_steps(model, (devices,), batch_size)[devices]
