"""`flow.save` of local tensors on 3 ranks (tests/test_global_mpi.py runs it: `local_saves.py FOLDER`), as OneFlow
0.9 saves them: each rank that calls it writes its own folder, with no communication.

1. ranks 0 and 1 save their own state dicts to one folder each while rank 2 saves nothing, then load them back;
2. the three ranks save different state dicts to one path, five times over: the folder left is whole and is one
   rank's save (its tensors all from that rank), and no temporary folder is left beside it;
3. global_dst_rank: a global state dict written by rank 2 alone.
Every rank prints `OK <what>` (rank 0's output is shown); a failed check raises."""
import os
import sys

import numpy as np

import oneflow as flow

folder = sys.argv[1]
rank = flow.env.get_rank()


def state(r, k=0):
    return {"weight": flow.tensor(np.full((3, 2), 10 * r + k, np.float32)),
            "step": flow.tensor(np.array([r], np.int64))}


if rank in (0, 1):
    flow.save(state(rank), os.path.join(folder, "rank_%d" % rank))
flow.comm.barrier()
if rank in (0, 1):
    loaded = flow.load(os.path.join(folder, "rank_%d" % rank))
    np.testing.assert_array_equal(loaded["weight"].numpy(), np.full((3, 2), 10 * rank, np.float32))
assert sorted(os.listdir(folder)) == ["rank_0", "rank_1"], os.listdir(folder)
flow.comm.barrier()  # (every rank looked before the next saves start)
print("OK each of ranks 0 and 1 saved its own folder, rank 2 none", flush=True)

shared = os.path.join(folder, "shared")
for k in range(5):
    flow.save(state(rank, k), shared)
flow.comm.barrier()
loaded = flow.load(shared)
writer = int(loaded["step"].numpy()[0])
assert writer in (0, 1, 2), writer
np.testing.assert_array_equal(loaded["weight"].numpy(), np.full((3, 2), 10 * writer + 4, np.float32))
assert sorted(os.listdir(folder)) == ["rank_0", "rank_1", "shared"], os.listdir(folder)
print("OK three ranks saving to one path leave one whole save", flush=True)

placement = flow.placement("cpu", ranks=[0, 1, 2])
whole = flow.tensor(np.arange(6, dtype=np.float32)).to_global(placement=placement, sbp=flow.sbp.broadcast)
flow.save({"w": whole.to_global(sbp=flow.sbp.split(0))}, os.path.join(folder, "by_rank_2"), global_dst_rank=2)
flow.comm.barrier()
np.testing.assert_array_equal(flow.load(os.path.join(folder, "by_rank_2"))["w"].numpy(), np.arange(6))
print("OK global_dst_rank=2 writes the gathered value", flush=True)
