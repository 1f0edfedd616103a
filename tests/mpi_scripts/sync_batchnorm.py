"""nn.SyncBatchNorm on local tensors on every rank (tests/test_nn_extra.py runs it under `mpiexec -n 2`): each rank
normalizes its own samples with the whole batch's statistics. Against one BatchNorm2d on the whole batch computed
on every rank alone: the rank's output piece, its input gradient (of every rank's loss summed), the sum over ranks of
the affine parameters' gradients, and the running statistics after two steps; then the same inside nn.Graph on local
tensors of unequal sizes. Rank 0 prints OK lines, then DONE."""
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

# inside nn.Graph on local tensors (beyond OneFlow 0.9, which refuses local_tensor.to_global() in a graph): each
# rank's graph normalizes with the whole batch's statistics, local batches of unequal sizes (3, 5, 4 samples), and
# one SGD step moves each rank's parameters by its share of the whole batch's gradient: the moves summed over the
# ranks are the one-rank model's step, the convolution's included (its gradient comes through the normalization's
# all-reduced backward)
flow.manual_seed(5)
ref_net = flow.nn.Sequential(flow.nn.Conv2d(3, 4, 3), flow.nn.BatchNorm2d(4, momentum=0.2)).to(flow.float64)
net = flow.nn.Sequential(flow.nn.Conv2d(3, 4, 3), flow.nn.BatchNorm2d(4, momentum=0.2)).to(flow.float64)
net.load_state_dict(ref_net.state_dict())
net = flow.nn.SyncBatchNorm.convert_sync_batchnorm(net)
start = {k: v.numpy().copy() for k, v in net.named_parameters()}
lr = 0.125  # exact in float32 (the graph's learning rate is a float32 value, as OneFlow's)
opt = flow.optim.SGD(net.parameters(), lr=lr)


class Train(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.net = net
        self.add_optimizer(opt)

    def build(self, x, r):
        y = self.net(x)
        (y * r).sum().backward()
        return y


sizes = [3, 5, 4, 4][:world] if world <= 3 else [4] * world
sizes[-1] += 4 * world - sum(sizes)
bounds = np.cumsum([0] + sizes)
part = slice(bounds[rank], bounds[rank + 1])
x, r = x_all[0], rng.uniform(0.5, 1.5, (4 * world, 4, 3, 2))
y = Train()(flow.tensor(x[part]), flow.tensor(r[part]))
y_ref = ref_net(flow.tensor(x))
(y_ref * flow.tensor(r)).sum().backward()
np.testing.assert_allclose(y.numpy(), y_ref.numpy()[part], rtol=1e-10, atol=1e-12)
for name, p in net.named_parameters():
    moved = p.numpy() - start[name]
    comm.allreduce_(moved, tuple(range(world)))
    want = -lr * dict(ref_net.named_parameters())[name].grad.numpy()
    np.testing.assert_allclose(moved, want, rtol=1e-8, atol=1e-10 * max(1.0, np.abs(want).max()), err_msg=name)
for name in ("running_mean", "running_var", "num_batches_tracked"):
    np.testing.assert_allclose(getattr(net[1], name).numpy(), getattr(ref_net[1], name).numpy(), rtol=1e-10,
                               err_msg=name)
cumulative = flow.nn.SyncBatchNorm(4, momentum=None).to(flow.float64)


class Cumulative(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.bn = cumulative

    def build(self, x):
        return self.bn(x)


try:  # a cumulative average reads the batch count on the host: refused in a graph (every rank alike)
    Cumulative()(flow.tensor(r[part]))
    raise AssertionError("SyncBatchNorm(momentum=None) in a graph of several ranks ran")
except ValueError as e:
    assert "momentum=None (a cumulative average) reads the batch count on the host" in str(e), e
if rank == 0:
    print("OK graph", flush=True)
    print("DONE", flush=True)
