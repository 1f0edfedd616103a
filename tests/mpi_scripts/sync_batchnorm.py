"""nn.SyncBatchNorm on local tensors on every rank (tests/test_nn_extra.py runs it under `mpiexec -n 2`): each rank
normalizes its own samples with the whole batch's statistics. Against one BatchNorm2d on the whole batch computed
on every rank alone: the rank's output piece, its input gradient (of every rank's loss summed), the sum over ranks of
the affine parameters' gradients, and the running statistics after two steps. Rank 0 prints OK lines, then DONE."""
import numpy as np

import oneflow_compat as flow
from oneflow_compat.runtime import global_eager

rank, world = global_eager.rank(), global_eager.world_size()
comm = global_eager.comm()
rng = np.random.default_rng(0)
x_all = [rng.standard_normal((4 * world, 3, 5, 4)) * 2 + 1 for _ in range(2)]
r_all = [rng.uniform(0.5, 1.5, (4 * world, 3, 5, 4)) for _ in range(2)]
w, b = rng.uniform(0.5, 1.5, 3), rng.standard_normal(3)


def make(cls):
    m = cls(3, momentum=0.2).to(flow.float64)
    with flow.no_grad():
        m.weight.copy_(flow.tensor(w))
        m.bias.copy_(flow.tensor(b))
    return m


ref = make(flow.nn.BatchNorm2d)
sync = flow.nn.SyncBatchNorm.convert_sync_batchnorm(flow.nn.Sequential(make(flow.nn.BatchNorm2d)))[0]
assert type(sync) is flow.nn.SyncBatchNorm, type(sync)
mine = slice(4 * rank, 4 * rank + 4)
for step in range(2):
    x, r = x_all[step], r_all[step]
    xt = flow.tensor(x, requires_grad=True)
    y = ref(xt)
    (y * flow.tensor(r)).sum().backward()
    xl = flow.tensor(x[mine], requires_grad=True)
    yl = sync(xl)
    (yl * flow.tensor(r[mine])).sum().backward()
    np.testing.assert_allclose(yl.numpy(), y.numpy()[mine], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(xl.grad.numpy(), xt.grad.numpy()[mine], rtol=1e-8, atol=1e-10)
    for name in ("weight", "bias"):  # this rank's own gradient; summed over ranks, the whole batch's
        total = getattr(sync, name).grad.numpy().copy()
        comm.allreduce_(total, tuple(range(world)))
        np.testing.assert_allclose(total, getattr(ref, name).grad.numpy(), rtol=1e-8, atol=1e-10)
        getattr(sync, name).grad = None
        getattr(ref, name).grad = None
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(sync, name).numpy(), getattr(ref, name).numpy(), rtol=1e-10)
    if rank == 0:
        print("OK step", step, flush=True)
sync.eval()
ref.eval()
xe = x_all[0][mine]
np.testing.assert_allclose(sync(flow.tensor(xe)).numpy(), ref(flow.tensor(xe)).numpy(), rtol=1e-10, atol=1e-13)
if rank == 0:
    print("OK eval", flush=True)

# under DistributedDataParallel: every gradient (the convolution's, upstream of the normalization, included) is the
# whole batch's summed loss gradient averaged over the ranks, i.e. the one-rank model's divided by the world size
flow.manual_seed(3)
ref_net = flow.nn.Sequential(flow.nn.Conv2d(3, 4, 3), flow.nn.BatchNorm2d(4))  # float32: DDP's parameters
net = flow.nn.Sequential(flow.nn.Conv2d(3, 4, 3), flow.nn.BatchNorm2d(4))
net.load_state_dict(ref_net.state_dict())
ddp = flow.nn.parallel.DistributedDataParallel(flow.nn.SyncBatchNorm.convert_sync_batchnorm(net))
x, r = x_all[1].astype(np.float32), rng.uniform(0.5, 1.5, (4 * world, 4, 3, 2)).astype(np.float32)
(ref_net(flow.tensor(x)) * flow.tensor(r)).sum().backward()
(ddp(flow.tensor(x[mine])) * flow.tensor(r[mine])).sum().backward()
for (name, p), (_, q) in zip(ddp.named_parameters(), ref_net.named_parameters()):
    want = q.grad.numpy() / world
    if name == "0.bias":  # a bias just before a normalization: its gradient is 0 up to rounding
        assert np.abs(p.grad.numpy()).max() < 1e-4 and np.abs(want).max() < 1e-4, (p.grad.numpy(), want)
        continue
    np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-4, atol=1e-4 * np.abs(want).max(), err_msg=name)
if rank == 0:
    print("OK ddp", flush=True)
    print("DONE", flush=True)
