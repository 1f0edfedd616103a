"""The hybrid job of the equivalence tests, runnable in one process or under mpiexec:

    python hybrid_job.py VARIANT DEVICES_PER_MACHINE BATCH OUT.npz
    mpiexec -n M python -m mpi4py hybrid_job.py VARIANT DEVICES_PER_MACHINE BATCH OUT.npz

VARIANT: data | model | pipeline | mirrored. Trains 3 steps from fixed weights; rank 0 writes losses and weights.
"""
import sys

import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp

variant, per_machine, batch, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
IN, HID, OUT = 16, 16, 6  # inputs are 1x4x4 images
CONV = 2  # filters of the 3x3 convolution
flow.config.cpu_device_num(per_machine)
cfg = flow.function_config()
if variant == "mirrored":
    cfg.default_logical_view(flow.scope.mirrored_view())
from oneflow_compat.framework import session as _sess  # noqa: E402

machines = _sess.default_session().machine_num()
ndev = machines * per_machine
last = "%d:%d" % (machines - 1, per_machine - 1)


def model(x, y):
    c = flow.reshape(x, [x.shape[0], 1, 4, 4])
    c = flow.layers.conv2d(c, CONV, 3, padding="SAME", activation=flow.nn.relu, name="c",
                           kernel_initializer=flow.random_uniform_initializer(-0.5, 0.5))
    h = flow.layers.dense(flow.reshape(c, [c.shape[0], -1]), HID, activation=flow.nn.relu, name="h")
    if variant == "pipeline":
        with flow.scope.placement("cpu", "0:0"):
            h = flow.math.relu(h)
        with flow.scope.placement("cpu", last):
            logits = flow.layers.dense(h, OUT, name="o")
    else:
        dist = flow.distribute.split(0) if variant == "model" else flow.distribute.broadcast()
        logits = flow.layers.dense(h, OUT, name="o", model_distribute=dist)
    return flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)


sgd = flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.2]), momentum=0.9)
if variant == "mirrored":
    per = -(-batch // ndev)

    @flow.global_function(type="train", function_config=cfg)
    def train(x: tp.ListNumpy.Placeholder((per, IN)), y: tp.ListNumpy.Placeholder((per,), dtype=flow.int32)
              ) -> tp.ListNumpy:
        loss = model(x, y)
        sgd.minimize(loss)
        return loss
else:
    @flow.global_function(type="train", function_config=cfg)
    def train(x: tp.Numpy.Placeholder((batch, IN)), y: tp.Numpy.Placeholder((batch,), dtype=flow.int32)
              ) -> tp.Numpy:
        loss = model(x, y)
        sgd.minimize(loss)
        return loss

r = np.random.default_rng(3)
flow.load_variables({"h-weight": r.normal(0, 0.3, (HID, CONV * IN)).astype(np.float32),
                     "h-bias": np.zeros(HID, np.float32),
                     "o-weight": r.normal(0, 0.3, (OUT, HID)).astype(np.float32), "o-bias": np.zeros(OUT, np.float32)})
losses = []
for s in range(3):
    x = np.random.default_rng(100 + s).normal(size=(batch, IN)).astype(np.float32)
    y = np.random.default_rng(200 + s).integers(0, OUT, batch).astype(np.int32)
    if variant == "mirrored":
        losses.append(np.concatenate(train(list(np.array_split(x, ndev)), list(np.array_split(y, ndev)))))
    else:
        losses.append(train(x, y))
weights = {k: v.numpy() for k, v in flow.get_all_variables().items()}
from oneflow_compat.comm import world  # noqa: E402

if world.get_process_comm().rank == 0:
    np.savez(out, losses=np.array(losses), **weights)
print("done", variant, machines, per_machine)
