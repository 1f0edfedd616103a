"""LeNet on MNIST (conv 32/64 5x5 SAME, max-pool, dense 512, dropout 0.5, dense 10), SGD 0.1, one epoch; then the
test accuracy. Saves ./lenet_example_model.

    python examples/lenet_train.py [--data-dir DIR] [--devices N] [--epochs E]"""
import argparse

import numpy as np
import oneflow as flow
import oneflow.typing as tp
from tqdm import tqdm

BATCH = 100
ap = argparse.ArgumentParser()
ap.add_argument("--data-dir", default=".")
ap.add_argument("--devices", type=int, default=1)
ap.add_argument("--epochs", type=int, default=1)
ap.add_argument("--model-dir", default="./lenet_example_model")
args = ap.parse_args()
flow.config.gpu_device_num(args.devices)


def lenet(data, train=False):
    initializer = flow.truncated_normal(0.1)
    conv1 = flow.layers.conv2d(data, 32, 5, padding="SAME", activation=flow.nn.relu, name="conv1",
                               kernel_initializer=initializer)
    pool1 = flow.nn.max_pool2d(conv1, ksize=2, strides=2, padding="SAME", name="pool1", data_format="NCHW")
    conv2 = flow.layers.conv2d(pool1, 64, 5, padding="SAME", activation=flow.nn.relu, name="conv2",
                               kernel_initializer=initializer)
    pool2 = flow.nn.max_pool2d(conv2, ksize=2, strides=2, padding="SAME", name="pool2", data_format="NCHW")
    reshape = flow.reshape(pool2, [pool2.shape[0], -1])
    hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, kernel_initializer=initializer,
                               name="dense1")
    if train:
        hidden = flow.nn.dropout(hidden, rate=0.5, name="dropout")
    return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="dense2")


@flow.global_function(type="train")
def train_job(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, lenet(images, train=True), name="softmax_loss")
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
    return loss


@flow.global_function(type="predict")
def eval_job(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float)) -> tp.Numpy:
    return lenet(images)


(train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(BATCH, BATCH,
                                                                                out_dir=args.data_dir)
for epoch in range(args.epochs):
    bar = tqdm(zip(train_images, train_labels), total=len(train_images), desc="epoch %d" % epoch, unit="step")
    for i, (images, labels) in enumerate(bar):  # the bar (stderr) shows the rate and the time left
        loss = train_job(images, labels)
        bar.set_postfix(loss="%.4f" % loss.mean(), refresh=False)
        if i % 100 == 0:
            tqdm.write("epoch %d step %d loss %.4f" % (epoch, i, loss.mean()))
correct = sum(int((eval_job(x).argmax(axis=1) == y).sum())
              for x, y in tqdm(zip(test_images, test_labels), total=len(test_images), desc="test", unit="batch"))
print("test accuracy: %.4f" % (correct / test_labels.size))
# the previous checkpoint stays until the new one is complete (written beside it, then swapped in)
flow.checkpoint.replace(args.model_dir)
