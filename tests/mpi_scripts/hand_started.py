"""Run by hand-started processes (the five launch variables exported, no launcher): one world, each process
prints its own lines."""
import oneflow as flow

placement = flow.placement("cpu", [0, 1])
x = flow.tensor([[1.0, 2.0], [3.0, 4.0]]).to_global(placement, flow.sbp.broadcast)
y = flow.matmul(x, flow.ones(2, 2, placement=placement, sbp=flow.sbp.split(1)))
local = flow.tensor([float(flow.env.get_rank() + 1)]).to_global(placement, flow.sbp.partial_sum)
print("rank %d of %d: sbp %s sum %s local %s" % (flow.env.get_rank(), flow.env.get_world_size(), y.sbp,
                                                  local.numpy().tolist(), y.to_local().numpy().tolist()), flush=True)
