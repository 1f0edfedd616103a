"""The hybrid job of the equivalence tests, runnable in one process or under mpiexec:

    python hybrid_job.py VARIANT DEVICES_PER_MACHINE BATCH OUT.npz
    mpiexec -n M python -m mpi4py hybrid_job.py VARIANT DEVICES_PER_MACHINE BATCH OUT.npz

VARIANT: data | model | pipeline | mirrored. Trains 3 steps from fixed weights; rank 0 writes losses and weights.
"""
import os
import sys

import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hybrid_model  # noqa: E402  (beside this script)
from hybrid_model import IN  # noqa: E402

variant, per_machine, batch, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
flow.config.cpu_device_num(per_machine)
cfg = flow.function_config()
if variant == "mirrored":
    cfg.default_logical_view(flow.scope.mirrored_view())
from oneflow_compat.framework import session as _sess  # noqa: E402

machines = _sess.default_session().machine_num()
ndev = machines * per_machine
last = "%d:%d" % (machines - 1, per_machine - 1)


def model(x, y):
    return hybrid_model.loss(x, y, variant, last)


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

flow.load_variables(hybrid_model.initial_weights())
losses = []
for s in range(3):
    x, y = hybrid_model.batch(s, batch)
    if variant == "mirrored":
        losses.append(np.concatenate(train(list(np.array_split(x, ndev)), list(np.array_split(y, ndev)))))
    else:
        losses.append(train(x, y))
weights = {k: v.numpy() for k, v in flow.get_all_variables().items()}
from oneflow_compat.comm import world  # noqa: E402

if world.get_process_comm().rank == 0:
    np.savez(out, losses=np.array(losses), **weights)
print("done", variant, machines, per_machine)
