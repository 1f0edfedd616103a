"""Data, model and pipeline parallelism by annotation: the same MLP with its output layer split over the devices
(model parallel) and its hidden layer on the first device only (a pipeline stage). Prints the compiler's plan
(every boxing with its collective and bytes), then trains.

    python examples/hybrid_parallel.py [--data-dir DIR] [--devices 2]"""
import argparse

import oneflow as flow
import oneflow.typing as tp
import oneflow_compat
from tqdm import tqdm

BATCH = 100
ap = argparse.ArgumentParser()
ap.add_argument("--data-dir", default=".")
ap.add_argument("--devices", type=int, default=2)
args = ap.parse_args()
flow.config.gpu_device_num(args.devices)


@flow.global_function(type="train")
def train_job(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
    reshape = flow.reshape(images, [images.shape[0], -1])
    with flow.scope.placement("gpu", "0:0"):
        hidden = flow.layers.dense(reshape, 256, activation=flow.nn.relu, name="hidden",
                                   kernel_initializer=flow.truncated_normal(0.1))
    logits = flow.layers.dense(hidden, 10, name="output", kernel_initializer=flow.truncated_normal(0.1),
                               model_distribute=flow.distribute.split(0))
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
    return loss


print(oneflow_compat.explain(train_job))
(train_images, train_labels), _ = flow.data.load_mnist(BATCH, BATCH, out_dir=args.data_dir)
for i, (images, labels) in enumerate(tqdm(zip(train_images[:300], train_labels[:300]), total=300, desc="train",
                                          unit="step")):
    loss = train_job(images, labels)
    if i % 100 == 0:
        tqdm.write("step %d loss %.4f" % (i, loss.mean()))
