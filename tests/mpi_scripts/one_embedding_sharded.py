"""flow.one_embedding on N ranks (tests/test_one_embedding_mpi.py): a table sharded over the ranks by OneFlow's
sharding hash, trained in an nn.Graph on a batch split over the ranks, then looked up whole and saved. Rank 0
writes the losses and rows as JSON; every rank checks it holds only the keys of its shard."""
import json
import os
import sys

import numpy as np

import oneflow as flow

out = sys.argv[1]
rank, n = flow.env.get_rank(), flow.env.get_world_size()
P = flow.placement("cpu", ranks=list(range(n)))
oe = flow.one_embedding
store = oe.make_device_mem_store_options(persistent_path=os.path.join(out, "tab"), capacity=1000, size_factor=2)
tables = [oe.make_table_options(oe.make_uniform_initializer(-0.5, 0.5)),
          oe.make_table_options(oe.make_normal_initializer(0.0, 0.3))]
emb = oe.MultiTableEmbedding("sharded", 4, flow.float, flow.int64, tables, store)
emb.to_global(P, flow.sbp.broadcast)
target = flow.tensor(np.linspace(-1, 1, 8 * 2 * 4, dtype=np.float32).reshape(8, 2, 4)).to_global(
    P, flow.sbp.broadcast).to_global(P, flow.sbp.split(0))


class Train(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.emb = emb
        self.add_optimizer(flow.optim.SGD(emb.parameters(), lr=0.1, momentum=0.9))

    def build(self, ids):
        loss = ((self.emb(ids) - target) ** 2).sum()
        loss.backward()
        return loss


rng = np.random.RandomState(0)
keys = rng.randint(-10 ** 12, 10 ** 12, 40).astype(np.int64)
graph = Train()
losses = []
for step in range(4):
    ids = keys[rng.randint(0, 40, (8, 2))]
    ids = flow.tensor(ids).to_global(P, flow.sbp.broadcast).to_global(P, flow.sbp.split(0))
    losses.append(float(graph(ids).to_global(P, flow.sbp.broadcast).to_local().numpy()))
# an eager step too (OneFlow 0.9's eager protocol: flow.one_embedding.Optimizer after the optimizer)
opt = oe.Optimizer(flow.optim.SGD(emb.parameters(), lr=0.1, momentum=0.9), [emb])
ids = flow.tensor(keys[rng.randint(0, 40, (8, 2))]).to_global(P, flow.sbp.broadcast).to_global(P, flow.sbp.split(0))
((emb(ids) - target) ** 2).sum().backward()
opt.step()
opt.zero_grad()
with flow.no_grad():
    whole = flow.tensor(keys.reshape(20, 2)).to_global(P, flow.sbp.broadcast)
    rows = emb(whole).to_local().numpy().reshape(40, 4)
emb.save_snapshot("final")
from oneflow_compat.kernels import one_embedding as k  # noqa: E402

for d, shard in emb._table.local_shards():
    held = shard.items()[0]
    assert d == rank and len(held) > 0, (d, rank, len(held))
    assert (k.shard_of(np, held, n) == rank).all(), "rank %d holds keys of another shard" % rank
if rank == 0:
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump({"losses": losses, "rows": rows.tolist(), "keys": keys.tolist()}, f)
print("rank %d OK" % rank)
