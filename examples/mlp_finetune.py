"""Fine-tuning: load the two dense layers saved by mlp_train.py into a model with a third layer; the new layer
keeps its initial values, the loaded ones continue training.

    python examples/mlp_finetune.py [--data-dir DIR]"""
import argparse

import oneflow as flow
import oneflow.typing as tp
from tqdm import tqdm

BATCH = 100
ap = argparse.ArgumentParser()
ap.add_argument("--data-dir", default=".")
ap.add_argument("--model-dir", default="./mlp_example_model")
args = ap.parse_args()


@flow.global_function(type="train")
def train_job(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
    reshape = flow.reshape(images, [images.shape[0], -1])
    hidden = flow.layers.dense(reshape, 500, activation=flow.nn.relu, name="dense1")
    logits = flow.layers.dense(hidden, 10, name="dense2")
    extra = flow.layers.dense(logits, 10, name="dense3", kernel_initializer=flow.truncated_normal(0.1))
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, extra)
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.01]), momentum=0).minimize(loss)
    return loss


checkpoint = flow.checkpoint.get(args.model_dir)
print("loading %s from %s" % (", ".join(sorted({k.split("-")[0] for k in checkpoint if k.startswith("dense")})),
                             args.model_dir))
flow.load_variables(checkpoint)  # dense3-* are not in the checkpoint and keep their initial values
(train_images, train_labels), _ = flow.data.load_mnist(BATCH, BATCH, out_dir=args.data_dir)
bar = tqdm(zip(train_images[:200], train_labels[:200]), total=200, desc="fine-tune", unit="step")
for i, (images, labels) in enumerate(bar):  # the bar (stderr) shows the rate and the time left
    loss = train_job(images, labels)
    bar.set_postfix(loss="%.4f" % loss.mean(), refresh=False)
    if i % 50 == 0:
        tqdm.write("step %d loss %.4f" % (i, loss.mean()))
