"""The legacy 2-D hybrid MLP (data parallel along mesh axis 0, model parallel along axis 1: oneflow_gpt's layout),
defined once: trained on in-process devices by tests/test_sbp2d.py (which imports `hybrid_mlp_job` and `train`) and
across processes by tests/test_global_2d_mpi.py, which runs this file in one process or under mpiexec:

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

N, IN, H, OUT = 9, 6, 5, 3  # uneven on both mesh axes: 9 rows over the data axis, 5 hidden units over the model axis
STEPS = 20


def hybrid_mlp_job(ids, hierarchy, grad_mode="manual"):
    """The train job on `flow.scope.placement("cpu", ids, hierarchy)`; without a hierarchy, no layouts are asked
    (one device, or plain data parallelism). `grad_mode`: the backward of the cast after the row-parallel matmul
    (OneFlow v0.4.0 hierarchical_parallel_cast: manual, restore or identity)."""
    cfg = flow.function_config()
    cfg.default_data_type(flow.float)
    two_d = hierarchy is not None

    def dist(*entries):
        return list(entries) if two_d else []

    @flow.global_function(type="train", function_config=cfg)
    def job(x: tp.Numpy.Placeholder((N, IN)), y: tp.Numpy.Placeholder((N,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", ids, hierarchy):
            if two_d:  # data parallel along mesh axis 0, model parallel along axis 1
                x = flow.hierarchical_parallel_cast(x, parallel_distribution=["S(0)", "B"])
            w1 = flow.get_variable("w1", (IN, H), initializer=flow.random_normal_initializer(stddev=0.5),
                                   random_seed=7, parallel_distribution=dist("B", "S(1)"))
            b1 = flow.get_variable("b1", (H,), initializer=flow.constant_initializer(0.1),
                                   parallel_distribution=dist("B", "S(0)"))
            w2 = flow.get_variable("w2", (H, OUT), initializer=flow.random_normal_initializer(stddev=0.5),
                                   random_seed=8, parallel_distribution=dist("B", "S(0)"))
            # held whole by every device: its data-parallel gradient is one all-reduced array the devices of a
            # process share, which the update must apply once
            b2 = flow.get_variable("b2", (OUT,), initializer=flow.constant_initializer(-0.2),
                                   parallel_distribution=dist("B", "B"))
            h = flow.nn.relu(flow.nn.bias_add(flow.matmul(x, w1), b1))
            z = flow.matmul(h, w2)  # [S(0), P] on the mesh
            if two_d:  # forward: all-reduce along the model axis; backward as the grad mode says
                kw = {"grad_mode": grad_mode}
                if grad_mode == "manual":
                    kw["grad_parallel_distribution"] = ["S(0)", "B"]
                z = flow.hierarchical_parallel_cast(z, parallel_distribution=["S(0)", "B"], **kw)
            z = flow.nn.bias_add(z, b2)
            loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(y, z))
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    return job


def train(job, steps=STEPS):
    """`steps` steps of `job` on the batches of `np.random.default_rng(0)`: (the losses, every variable by name)."""
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        x = rng.standard_normal((N, IN)).astype(np.float32)
        y = rng.integers(0, OUT, N).astype(np.int32)
        losses.append(float(np.asarray(job(x, y)).reshape(-1)[0]))
    return losses, {k: v.numpy() for k, v in flow.get_all_variables().items()}


def main(per_machine, out):
    from oneflow_compat.comm import world
    from oneflow_compat.framework import session as _sess

    flow.config.cpu_device_num(per_machine)
    machines = _sess.default_session().machine_num()
    if machines * per_machine > 1:
        assert machines * per_machine == 4, (machines, per_machine)
        ids = ["%d:0-%d" % (m, per_machine - 1) if per_machine > 1 else "%d:0" % m for m in range(machines)]
        job = hybrid_mlp_job(ids, (2, 2))
    else:
        job = hybrid_mlp_job("0:0", None)
    losses, weights = train(job)
    if world.get_process_comm().rank == 0:
        np.savez(out, losses=np.array(losses), **weights)
    print("done", machines, per_machine)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
