"""Asynchronous results: a train job returning `tp.Callback[tp.Numpy]` hands its loss to a function instead of
returning it, and `flow.watch` shows an intermediate blob.

    python examples/mlp_async.py [--data-dir DIR]"""
import argparse

import numpy as np
import oneflow as flow
import oneflow.typing as tp
from tqdm import tqdm

BATCH = 100
ap = argparse.ArgumentParser()
ap.add_argument("--data-dir", default=".")
args = ap.parse_args()


def show_hidden_mean(hidden: tp.Numpy):
    show_hidden_mean.last = float(hidden.mean())


@flow.global_function(type="train")
def train_job(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Callback[tp.Numpy]:
    reshape = flow.reshape(images, [images.shape[0], -1])
    hidden = flow.layers.dense(reshape, 256, activation=flow.nn.relu, name="hidden",
                               kernel_initializer=flow.truncated_normal(0.1))
    flow.watch(hidden, show_hidden_mean)
    logits = flow.layers.dense(hidden, 10, name="output", kernel_initializer=flow.truncated_normal(0.1))
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
    return loss


def report(step):
    def on_loss(loss: tp.Numpy):
        if step % 100 == 0:
            tqdm.write("step %d loss %.4f (mean hidden activation %.4f)" % (step, loss.mean(),
                                                                           show_hidden_mean.last))
    return on_loss


(train_images, train_labels), _ = flow.data.load_mnist(BATCH, BATCH, out_dir=args.data_dir)
for i, (images, labels) in enumerate(tqdm(zip(train_images, train_labels), total=len(train_images), desc="train",
                                          unit="step")):
    train_job(images, labels)(report(i))
