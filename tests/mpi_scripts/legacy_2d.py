"""The legacy 2-D hybrid MLP (data parallel along mesh axis 0, model parallel along axis 1) of
tests/test_global_2d_mpi.py, runnable in one process or under mpiexec:

    python legacy_2d.py DEVICES_PER_MACHINE OUT.npz                 # one device per machine: "0:0" (the reference)
    mpiexec -n M python -m mpi4py legacy_2d.py DEVICES_PER_MACHINE OUT.npz

Under mpiexec the job runs on a (2, 2) hierarchy over every machine's devices (M x DEVICES_PER_MACHINE == 4:
`flow.scope.placement("cpu", ["0:0-1", "1:0-1"], (2, 2))` or `["0:0", "1:0", "2:0", "3:0"]`), in one process on
"0:0" without a hierarchy. 20 SGD-momentum steps on 9 rows (uneven over the data axis) and 5 hidden units (uneven
over the model axis); rank 0 writes the losses and the variables.
"""
import sys

import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp

N, IN, H, OUT = 9, 6, 5, 3
STEPS = 20


def main(per_machine, out):
    from oneflow_compat.comm import world
    from oneflow_compat.framework import session as _sess

    flow.config.cpu_device_num(per_machine)
    machines = _sess.default_session().machine_num()
    two_d = machines * per_machine > 1
    if two_d:
        assert machines * per_machine == 4, (machines, per_machine)
        ids = ["%d:0-%d" % (m, per_machine - 1) if per_machine > 1 else "%d:0" % m for m in range(machines)]
        hierarchy = (2, 2)
    else:
        ids, hierarchy = "0:0", None
    cfg = flow.function_config()
    cfg.default_data_type(flow.float)

    def dist(*entries):
        return list(entries) if two_d else []

    @flow.global_function(type="train", function_config=cfg)
    def job(x: tp.Numpy.Placeholder((N, IN)), y: tp.Numpy.Placeholder((N,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", ids, hierarchy):
            if two_d:
                x = flow.hierarchical_parallel_cast(x, parallel_distribution=["S(0)", "B"])
            w1 = flow.get_variable("w1", (IN, H), initializer=flow.random_normal_initializer(stddev=0.5),
                                   random_seed=7, parallel_distribution=dist("B", "S(1)"))
            b1 = flow.get_variable("b1", (H,), initializer=flow.constant_initializer(0.1),
                                   parallel_distribution=dist("B", "S(0)"))
            w2 = flow.get_variable("w2", (H, OUT), initializer=flow.random_normal_initializer(stddev=0.5),
                                   random_seed=8, parallel_distribution=dist("B", "S(0)"))
            b2 = flow.get_variable("b2", (OUT,), initializer=flow.constant_initializer(-0.2),
                                   parallel_distribution=dist("B", "B"))  # whole on every device
            h = flow.nn.relu(flow.nn.bias_add(flow.matmul(x, w1), b1))
            z = flow.matmul(h, w2)
            if two_d:
                z = flow.hierarchical_parallel_cast(z, parallel_distribution=["S(0)", "B"], grad_mode="manual",
                                                    grad_parallel_distribution=["S(0)", "B"])
            z = flow.nn.bias_add(z, b2)
            loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(y, z))
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    rng = np.random.default_rng(0)
    losses = []
    for _ in range(STEPS):
        x = rng.standard_normal((N, IN)).astype(np.float32)
        y = rng.integers(0, OUT, N).astype(np.int32)
        losses.append(float(np.asarray(job(x, y)).reshape(-1)[0]))
    weights = {k: v.numpy() for k, v in flow.get_all_variables().items()}
    if world.get_process_comm().rank == 0:
        np.savez(out, losses=np.array(losses), **weights)
    print("done", machines, per_machine)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
