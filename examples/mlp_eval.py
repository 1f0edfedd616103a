"""Evaluate the model saved by mlp_train.py: a predict job loads the checkpoint and reports test accuracy.

    python examples/mlp_eval.py [--data-dir DIR]"""
import argparse

import numpy as np
import oneflow as flow
import oneflow.typing as tp
from tqdm import tqdm

BATCH = 100
ap = argparse.ArgumentParser()
ap.add_argument("--data-dir", default=".")
ap.add_argument("--model-dir", default="./mlp_example_model")
args = ap.parse_args()


@flow.global_function(type="predict")
def eval_job(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float)) -> tp.Numpy:
    reshape = flow.reshape(images, [images.shape[0], -1])
    hidden = flow.layers.dense(reshape, 500, activation=flow.nn.relu, name="dense1")
    return flow.layers.dense(hidden, 10, name="dense2")


flow.load_variables(flow.checkpoint.get(args.model_dir))
_, (test_images, test_labels) = flow.data.load_mnist(BATCH, BATCH, out_dir=args.data_dir)
correct = total = 0
for images, labels in tqdm(zip(test_images, test_labels), total=len(test_images), desc="test", unit="batch"):
    logits = eval_job(images)
    correct += int((logits.argmax(axis=1) == labels).sum())
    total += len(labels)
print("accuracy: %.4f" % (correct / total))
