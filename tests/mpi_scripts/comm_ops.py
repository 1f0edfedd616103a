"""`flow.comm` (OneFlow 0.9's collectives on local tensors) on 3 ranks (tests/test_global_mpi.py runs it): every
function against the numpy value each rank computes from all ranks' inputs. Prints `OK <name>` per function
(rank 0's output is shown); a failed check raises, and the job ends non-zero."""
import numpy as np

import oneflow as flow

rank, world = flow.env.get_rank(), flow.env.get_world_size()
assert world == 3


def mine(r, shape=(2, 3), dtype=np.float32):
    return (np.arange(np.prod(shape)).reshape(shape) + 10 * r).astype(dtype)


def same(t, want):
    np.testing.assert_array_equal(t.numpy(), want)
    assert not t.is_global


everyone = [mine(r) for r in range(world)]

t = flow.tensor(mine(rank))
flow.comm.all_reduce(t)
same(t, sum(everyone))
print("OK all_reduce", flush=True)

got = [None] * world
flow.comm.all_gather(got, flow.tensor(mine(rank)))
for r in range(world):
    same(got[r], everyone[r])
print("OK all_gather", flush=True)

stacked, concat = flow.zeros(3, 2, 3), flow.zeros(6, 3)
flow.comm.all_gather_into_tensor(stacked, flow.tensor(mine(rank)))
flow.comm.all_gather_into_tensor(concat, flow.tensor(mine(rank)))
same(stacked, np.stack(everyone))
same(concat, np.concatenate(everyone))
print("OK all_gather_into_tensor", flush=True)

out = flow.zeros(2, 3)
flow.comm.reduce_scatter_tensor(out, flow.tensor(np.stack([mine(rank) * (q + 1) for q in range(world)])))
same(out, sum(everyone) * (rank + 1))
print("OK reduce_scatter_tensor", flush=True)

t = flow.tensor(mine(rank, dtype=np.int64))
flow.comm.broadcast(t, 2)
same(t, mine(2, dtype=np.int64))
print("OK broadcast", flush=True)

t = flow.zeros(2, 3)
flow.comm.scatter(t, [flow.tensor(mine(q) * 100) for q in range(world)] if rank == 1 else None, src=1)
same(t, mine(rank) * 100)
print("OK scatter", flush=True)

t = flow.tensor(mine(rank))
flow.comm.reduce(t, 0)
same(t, sum(everyone) if rank == 0 else mine(rank))
print("OK reduce", flush=True)

outs = [flow.zeros(2, 3) for _ in range(world)]
flow.comm.all_to_all(outs, [flow.tensor(mine(rank) + q) for q in range(world)])
for r in range(world):
    same(outs[r], mine(r) + rank)  # rank r's piece for this rank
print("OK all_to_all", flush=True)

out = flow.zeros(2, 3)
flow.comm.reduce_scatter(out, [flow.tensor(mine(rank) * (q + 1)) for q in range(world)])
same(out, sum(everyone) * (rank + 1))
print("OK reduce_scatter", flush=True)

listed = [None] * world
flow.comm.gather(flow.tensor(mine(rank)), listed, dst=0)
for r in range(world):
    same(listed[r], everyone[r])
print("OK gather", flush=True)

if rank == 0:
    flow.comm.send(flow.tensor(mine(0, (4,), np.int32)), 2)
    flow.comm.send(flow.tensor(mine(0, (2, 2))), 1, send_meta=False)
elif rank == 2:
    got = flow.comm.recv(0)
    assert got.dtype == flow.int32 and tuple(got.shape) == (4,)
    same(got, mine(0, (4,), np.int32))
else:
    same(flow.comm.recv(0, shape=(2, 2), dtype=flow.float32, device=flow.device("cpu")), mine(0, (2, 2)))
flow.comm.barrier()
print("OK send recv barrier", flush=True)
