"""Random draws of a global-API program that never seeds (ONEFLOW_COMPAT_SEED set by the test): each rank's local
tensors, module initial values, data loader order, its default generator's seed, and a global tensor. Run under
`mpiexec -n 2` by tests/test_rank_generators.py, which runs `draws()` on 2 simulated ranks too: the two must be equal
(each simulated rank has its own default generators, as each process has). Rank 0 prints `RANK r <json>` for each."""
import json


def draws():
    import oneflow_compat as flow

    rank = flow.env.get_rank()
    local = flow.randn(3).numpy().tolist()
    weight = flow.nn.Linear(2, 2).weight.numpy().tolist()
    placement = flow.placement("cpu", [0, 1])
    glob = flow.randn(2, 3, placement=placement, sbp=flow.sbp.broadcast).to_local().numpy().tolist()
    order = [int(i) for batch in flow.utils.data.DataLoader(list(range(6)), batch_size=3, shuffle=True)
             for i in batch.numpy()]
    if rank == 1:  # one rank seeds: the other's generators do not see it
        flow.manual_seed(5)
    after = flow.rand(2).numpy().tolist()
    return {"rank": rank, "local": local, "weight": weight, "global": glob, "order": order, "after": after,
            "seed": int(flow.default_generator.initial_seed())}


if __name__ == "__main__":
    from mpi4py import MPI

    everyone = MPI.COMM_WORLD.gather(draws(), root=0)  # (only rank 0's stdout reaches the test)
    if everyone is not None:
        for out in everyone:
            print("RANK %d %s" % (out["rank"], json.dumps(out)), flush=True)
