"""The hybrid job of the equivalence tests (conv -> dense -> dense), shared by the in-process tests
(tests/test_multi_device.py) and the MPI script (hybrid_job.py)."""
import numpy as np

import oneflow_compat as flow

IN, HID, OUT = 16, 16, 6  # inputs are 1x4x4 images
CONV = 2  # filters of the 3x3 convolution


def initial_weights():
    r = np.random.default_rng(3)
    return {"h-weight": r.normal(0, 0.3, (HID, CONV * IN)).astype(np.float32),
            "h-bias": np.zeros(HID, np.float32),
            "o-weight": r.normal(0, 0.3, (OUT, HID)).astype(np.float32), "o-bias": np.zeros(OUT, np.float32)}


def batch(step, size):
    x = np.random.default_rng(100 + step).normal(size=(size, IN)).astype(np.float32)
    y = np.random.default_rng(200 + step).integers(0, OUT, size).astype(np.int32)
    return x, y


def loss(x, y, variant, last_device):
    """variant: data | model (output layer split over the devices) | pipeline (output layer on `last_device`) |
    mirrored (the caller sets the view)."""
    c = flow.reshape(x, [x.shape[0], 1, 4, 4])
    c = flow.layers.conv2d(c, CONV, 3, padding="SAME", activation=flow.nn.relu, name="c",
                           kernel_initializer=flow.random_uniform_initializer(-0.5, 0.5))
    h = flow.layers.dense(flow.reshape(c, [c.shape[0], -1]), HID, activation=flow.nn.relu, name="h")
    if variant == "pipeline":
        with flow.scope.placement("cpu", "0:0"):
            h = flow.math.relu(h)
        with flow.scope.placement("cpu", last_device):
            logits = flow.layers.dense(h, OUT, name="o")
    else:
        dist = flow.distribute.split(0) if variant == "model" else flow.distribute.broadcast()
        logits = flow.layers.dense(h, OUT, name="o", model_distribute=dist)
    return flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
