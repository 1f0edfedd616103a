"""Train a 784-500-10 MLP on MNIST for one epoch and save it to ./mlp_example_model.

    python examples/mlp_train.py [--data-dir DIR] [--devices N]

`--devices N` runs the same script data-parallel on N devices (in one process, or per machine under mpiexec)."""
import argparse

import numpy as np
import oneflow as flow
import oneflow.typing as tp
from tqdm import tqdm

BATCH = 100
ap = argparse.ArgumentParser()
ap.add_argument("--data-dir", default=".", help="folder holding mnist.npz (downloaded there if missing)")
ap.add_argument("--devices", type=int, default=1)
ap.add_argument("--model-dir", default="./mlp_example_model")
args = ap.parse_args()

flow.config.gpu_device_num(args.devices)


@flow.global_function(type="train")
def train_job(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
    initializer = flow.truncated_normal(0.1)
    reshape = flow.reshape(images, [images.shape[0], -1])
    hidden = flow.layers.dense(reshape, 500, activation=flow.nn.relu, kernel_initializer=initializer,
                               name="dense1")
    logits = flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="dense2")
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.001])).minimize(loss)
    return loss


(train_images, train_labels), _ = flow.data.load_mnist(BATCH, BATCH, out_dir=args.data_dir)
bar = tqdm(zip(train_images, train_labels), total=len(train_images), desc="train", unit="step")
for i, (images, labels) in enumerate(bar):  # the bar (stderr) shows the rate and the time left
    loss = train_job(images, labels)
    bar.set_postfix(loss="%.4f" % loss.mean(), refresh=False)
    if i % 100 == 0:
        tqdm.write("step %d loss %.4f" % (i, loss.mean()))
# the previous checkpoint stays until the new one is complete (written beside it, then swapped in)
flow.checkpoint.replace(args.model_dir)
print("saved", args.model_dir)
