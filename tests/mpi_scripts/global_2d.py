"""2-D SBP with global tensors on 4 ranks (run by tests/test_global_2d_mpi.py under `mpiexec -n 4`): the program of
OneFlow's "2D SBP" page (its data and what each rank holds), every to_global between {B, S(0), S(1), P}^2 on a
2 x 2 mesh and between the mesh and 1-D placements (the value, and each rank's piece, against numpy), local -> global
on a mesh, layout-free random numbers, and a data x model parallel MLP trained 20 steps eagerly and as an nn.Graph
against the same program on one rank and a numpy reference. Rank 0 prints `OK <check>` per check."""
import itertools
import sys

import numpy as np

import oneflow as flow
import oneflow.nn as nn
from oneflow_compat.runtime import global_eager
from oneflow_compat.tools.data_parallel_mlp import TrainGraph

comm = global_eager.comm()
RANK, WORLD = comm.rank, comm.size
assert WORLD == 4, "run under mpiexec -n 4"
B, PS, S0, S1 = flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.split(0), flow.sbp.split(1)
SYMBOLS = [B, S0, S1, PS]
MESH = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
COORDS = {0: (0, 0), 1: (0, 1), 2: (1, 0), 3: (1, 1)}


def ok(name):
    if RANK == 0:
        print("OK", name)
        sys.stdout.flush()


def block(shape, sbp, coords, mesh=(2, 2)):
    """The block of a mesh device: mesh axis 0 cuts first, each axis the part the axes before it left."""
    ranges = [[0, n] for n in shape]
    for s, m, c in zip(sbp, mesh, coords):
        if s in (S0, S1):
            a = 0 if s == S0 else 1
            lo, hi = ranges[a]
            base, extra = divmod(hi - lo, m)
            start = lo + c * base + min(c, extra)
            ranges[a] = [start, start + base + (1 if c < extra else 0)]
    return tuple(slice(a, b) for a, b in ranges)


def check_piece(t, logical, what):
    """This rank's piece of a global tensor on the mesh (or a 1-D placement) against numpy."""
    pl, sbp = t.placement, t.sbp
    local = t.to_local().numpy()
    ranks = pl.ranks.flatten().tolist()  # OneFlow 0.9: an int64 ndarray shaped like the mesh
    if RANK not in ranks:
        assert local.size == 0, what
        return
    coords = COORDS[RANK] if len(sbp) == 2 else (sorted(ranks).index(RANK),)
    mesh = (2, 2) if len(sbp) == 2 else (len(ranks),)
    want = logical[block(logical.shape, sbp, coords, mesh)]
    assert local.shape == want.shape, (what, local.shape, want.shape)
    if PS not in sbp:
        np.testing.assert_array_equal(local, want, err_msg=what)


# --- the "2D SBP" page's program --------------------------------------------------------------------------------------
PLACEMENT = flow.placement("cpu", [[0, 1], [2, 3]])
BROADCAST = (flow.sbp.broadcast, flow.sbp.broadcast)
BS0 = (flow.sbp.broadcast, flow.sbp.split(0))
flow.manual_seed(RANK)  # each rank's own local tensor, as on the page (every process draws its own)
model = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))
model = model.to_global(placement=PLACEMENT, sbp=BROADCAST)
x = flow.randn(1, 2, 8)
global_x = x.to_global(placement=PLACEMENT, sbp=BS0)
pred = model(global_x)
local_x = global_x.to_local()
assert str(local_x.device) == "cpu:%d" % RANK and tuple(local_x.shape) == (1, 2, 8)
# broadcast along mesh axis 0 takes the first rank of each group along it: ranks 0 and 2 hold rank 0's x, 1 and 3
# rank 1's (the page's output); split(0) along axis 1 concatenates the two
locals_ = comm.allgather_object(x.numpy())
np.testing.assert_array_equal(local_x.numpy(), locals_[RANK % 2])
assert tuple(global_x.shape) == (2, 2, 8) and global_x.sbp == BS0
whole = np.concatenate([locals_[0], locals_[1]])
np.testing.assert_array_equal(global_x.numpy(), whole)
w1, b1 = model[0].weight.numpy(), model[0].bias.numpy()
w2, b2 = model[2].weight.numpy(), model[2].bias.numpy()
np.testing.assert_allclose(pred.numpy(), np.maximum(whole @ w1.T + b1, 0) @ w2.T + b2, rtol=1e-5, atol=1e-6)
assert pred.placement == PLACEMENT and tuple(pred.shape) == (2, 2, 2)
print(f'{local_x.device}, {local_x.shape}, \n{local_x}')
sys.stdout.flush()
comm.barrier()
ok("the 2D SBP page's program")

# --- every transition on the mesh and to / from 1-D placements ------------------------------------------------------
pairs = list(itertools.product(SYMBOLS, SYMBOLS))
for shape in ((8, 12), (7, 5)):
    value = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) % 17 - 8
    start = flow.tensor(value).to_global(MESH, BROADCAST)
    count = 0
    for a in pairs:
        src = start.to_global(sbp=a)
        check_piece(src, value, "B,B -> %s" % (a,))
        for b in pairs:
            dst = src.to_global(sbp=b)
            assert dst.sbp == b and dst.placement == MESH
            check_piece(dst, value, "%s -> %s" % (a, b))
            np.testing.assert_array_equal(dst.numpy(), value, err_msg="%s -> %s" % (a, b))
            count += 1
        for ranks in ([0, 1, 2, 3], [1, 2], [3]) if shape == (7, 5) else ():  # (both shapes: test_boxing_nd.py)
            line = flow.placement("cpu", ranks)
            for s in SYMBOLS:
                there = src.to_global(line, s)
                check_piece(there, value, "%s -> %s %s" % (a, ranks, s))
                np.testing.assert_array_equal(there.numpy(), value)
                back = there.to_global(MESH, a)
                check_piece(back, value, "%s %s -> %s" % (ranks, s, a))
                np.testing.assert_array_equal(back.numpy(), value)
                count += 2
    ok("%d transitions of a %dx%d tensor on a 2x2 mesh and to/from 1-D placements" % (count, shape[0], shape[1]))

# --- local -> global on the mesh: nested pieces, balanced sizes checked --------------------------------------------
rows = {0: 2, 1: 2, 2: 2, 3: 1}[RANK]  # 7 rows cut (S(0), S(0)): 4 | 3, then 2 | 2 and 2 | 1
t = flow.tensor(np.full((rows, 3), RANK, np.float32)).to_global(MESH, (S0, S0))
assert tuple(t.shape) == (7, 3)
np.testing.assert_array_equal(t.numpy()[:, 0], [0, 0, 1, 1, 2, 2, 3])
try:
    flow.tensor(np.zeros((1 if RANK == 0 else 2, 3), np.float32)).to_global(MESH, (S0, S0))
except ValueError as e:
    assert "must be same or match balanced split distribution" in str(e), e
else:
    raise AssertionError("unbalanced local pieces were accepted")
# B along mesh axis 1 takes the first rank of each group along it (ranks 0 and 2); P along axis 0 adds the two
p = flow.tensor(np.full((2, 2), float(RANK + 1), np.float32)).to_global(MESH, (PS, B))
np.testing.assert_array_equal(p.to_local().numpy(), np.full((2, 2), 1.0 if RANK < 2 else 3.0))
np.testing.assert_array_equal(p.numpy(), np.full((2, 2), 1.0 + 3.0))
ok("local -> global on a mesh")

# --- creation ops on the mesh: each layout's pieces of the value one rank makes; a global tensor's text -------------
ONE_RANK = flow.placement("cpu", [0])
CREATORS = [("zeros", lambda **k: flow.zeros(5, 3, **k)), ("ones", lambda **k: flow.ones(5, 3, **k)),
            ("full", lambda **k: flow.full((5, 3), 2.5, **k)), ("eye", lambda **k: flow.eye(5, 3, **k)),
            ("rand", lambda **k: flow.rand(5, 3, **k)), ("randint", lambda **k: flow.randint(0, 9, (5, 3), **k)),
            ("normal", lambda **k: flow.normal(1.0, 2.0, (5, 3), **k)), ("arange", lambda **k: flow.arange(7, **k)),
            ("randperm", lambda **k: flow.randperm(7, **k)),
            ("tensor", lambda **k: flow.tensor(np.arange(15.0).reshape(5, 3), **k))]
for name, make in CREATORS:
    for sbp in ((S0, S1), (B, S0), (S1, B), (PS, S0), (S0, S0)):
        if name in ("arange", "randperm") and S1 in sbp:
            continue
        flow.manual_seed(4)
        t = make(placement=MESH, sbp=sbp)
        flow.manual_seed(4)
        want = make(placement=ONE_RANK, sbp=B).numpy()
        assert t.sbp == sbp and t.placement == MESH, (name, sbp)
        check_piece(t, want, "%s %s" % (name, sbp))
        np.testing.assert_array_equal(t.numpy(), want, err_msg=name)
text = " ".join(str(flow.arange(6, placement=MESH, sbp=(B, S0))).split())  # its line breaks follow COLUMNS
assert text == ('tensor([0, 1, 2, 3, 4, 5], placement=oneflow.placement(type="cpu", ranks=[[0, 1], [2, 3]]), '
                'sbp=(oneflow.sbp.broadcast, oneflow.sbp.split(dim=0)), dtype=oneflow.int64)'), text
ok("creation ops on a mesh == on one rank")

# --- random numbers do not depend on the layout -----------------------------------------------------------------
flow.manual_seed(11)
r2 = flow.randn(6, 5, placement=MESH, sbp=(S0, S1))
flow.manual_seed(11)
r1 = flow.randn(6, 5, placement=flow.placement("cpu", [0]), sbp=B)
np.testing.assert_array_equal(r2.numpy(), r1.numpy())
ok("random numbers on a mesh == on one rank")

# --- a data x model parallel MLP: 20 steps, eager and nn.Graph, == one rank == numpy ------------------------------
N, IN, H, OUT = 9, 6, 5, 3  # uneven on both mesh axes: 9 rows over the data axis, 5 hidden units over the model axis
rng = np.random.default_rng(0)
W1 = rng.standard_normal((H, IN)).astype(np.float32) * 0.5
C1 = rng.standard_normal(H).astype(np.float32) * 0.1
W2 = rng.standard_normal((OUT, H)).astype(np.float32) * 0.5
C2 = rng.standard_normal(OUT).astype(np.float32) * 0.1
XS = [rng.standard_normal((N, IN)).astype(np.float32) for _ in range(20)]
YS = [rng.integers(0, OUT, N) for _ in range(20)]


def numpy_mlp(lr=0.1, mom=0.9):
    ws = [a.astype(np.float64) for a in (W1, C1, W2, C2)]
    vel = [np.zeros_like(w) for w in ws]
    losses = []
    for x, y in zip(XS, YS):
        h = x @ ws[0].T + ws[1]
        a = np.maximum(h, 0)
        z = a @ ws[2].T + ws[3]
        e = np.exp(z - z.max(1, keepdims=True))
        p = e / e.sum(1, keepdims=True)
        losses.append(-np.log(p[np.arange(N), y]).mean())
        dz = p.copy()
        dz[np.arange(N), y] -= 1
        dz /= N
        da = dz @ ws[2]
        dh = da * (h > 0)
        for k, g in enumerate((dh.T @ x, dh.sum(0), dz.T @ a, dz.sum(0))):
            vel[k] = mom * vel[k] - lr * g  # OneFlow's momentum: v = beta v - lr g; w += v
            ws[k] += vel[k]
    return losses, ws


def hybrid_mlp(placement, layouts):
    m = nn.Sequential(nn.Linear(IN, H), nn.ReLU(), nn.Linear(H, OUT))
    whole = layouts["whole"]
    m.to_global(placement, whole)
    for param, value, key in zip(m.parameters(), (W1, C1, W2, C2), ("col_w", "col_b", "row_w", "whole")):
        with flow.no_grad():
            param.data = flow.tensor(value).to_global(placement, whole).to_global(sbp=layouts[key])
    return m


def train(placement, layouts, graph):
    m = hybrid_mlp(placement, layouts)
    opt = flow.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    if graph:
        step = TrainGraph(m, opt, loss_fn)
    else:
        def step(x, y):
            loss = loss_fn(m(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
    losses = []
    for x, y in zip(XS, YS):
        gx = flow.tensor(x).to_global(placement, layouts["whole"]).to_global(sbp=layouts["data"])
        gy = flow.tensor(y).to_global(placement, layouts["whole"]).to_global(sbp=layouts["data"])
        losses.append(float(step(gx, gy).numpy()))
    params = [(p.numpy(), p.sbp) for p in m.parameters()]
    if not graph:  # each gradient has its parameter's own (n-D) layout, the model-parallel split kept: opt.zero_grad()
        # turned the zeroed gradient's B into P (OneFlow 0.9's Tensor._zero_grad_) and the backward gave it its
        # parameter's layout again (OneFlow 0.9's AccGrad4LeafTensor, core/autograd/autograd_engine.cpp:154-175)
        for p in m.parameters():
            assert p.grad.placement == placement and tuple(p.grad.sbp) == tuple(p.sbp), (p.grad.sbp, p.sbp)
            assert p.grad._value.sbp == p._value.sbp, (p.grad._value.sbp, p._value.sbp)
        opt.zero_grad()
        for p in m.parameters():
            want = tuple(flow.sbp.partial_sum if s == flow.sbp.broadcast else s for s in p.sbp)
            assert tuple(p.grad.sbp) == want, (p.grad.sbp, p.sbp)
    return losses, params


TWO_D = {"whole": (B, B), "data": (S0, B), "col_w": (B, S0), "col_b": (B, S0), "row_w": (B, S1)}
ONE = {key: B for key in TWO_D}
ref_losses, ref_params = numpy_mlp()
for graph in (False, True):
    what = "nn.Graph" if graph else "eager"
    one_losses, one_params = train(flow.placement("cpu", [0]), ONE, graph)
    losses, params = train(MESH, TWO_D, graph)
    np.testing.assert_allclose(losses, one_losses, rtol=1e-5, err_msg=what)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, err_msg=what)
    for (got, sbp), (want, _), key, ref in zip(params, one_params, ("col_w", "col_b", "row_w", "whole"), ref_params):
        assert sbp == TWO_D[key], (what, sbp, key)  # the update went to the parameter's own 2-D layout
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5, err_msg=what)
    ok("a data x model parallel MLP, 20 steps %s on a 2x2 mesh == 1 rank == numpy" % what)

# --- Adam with weight decay and clip_grad_norm_ over parameters in 2-D layouts == one rank --------------------------
def clipped_adam(placement, lay):
    flow.manual_seed(1)
    m = nn.Sequential(nn.Linear(6, 5), nn.GELU(), nn.LayerNorm(5), nn.Linear(5, 3)).to_global(placement, lay["bb"])
    for param, key in zip(m.parameters(), ("c", "c", "bb", "bb", "r", "bb")):
        with flow.no_grad():
            param.data = param.data.to_global(sbp=lay[key])
    opt = flow.optim.Adam(m.parameters(), lr=0.05, weight_decay=0.1)
    got = []
    for s in range(5):
        flow.manual_seed(10 + s)
        x = flow.randn(9, 6, placement=placement, sbp=lay["d"])
        loss = (m(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(m.parameters(), 0.5)  # the norm of the whole gradients, whatever the layout
        opt.step()
        got.append((float(loss.numpy()), float(norm.numpy())))
    return got, [param.numpy() for param in m.parameters()]


mesh_run = clipped_adam(MESH, {"bb": (B, B), "c": (B, S0), "r": (B, S1), "d": (S0, B)})
one_run = clipped_adam(flow.placement("cpu", [0]), {k: B for k in ("bb", "c", "r", "d")})
np.testing.assert_allclose(mesh_run[0], one_run[0], rtol=1e-5)
assert max(n for _, n in one_run[0]) > 0.5  # the clipping scaled some steps
for got, want in zip(mesh_run[1], one_run[1]):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
ok("Adam and clip_grad_norm_ on 2-D layouts == 1 rank")

# --- conv, batch norm (its running statistics updated in place), pooling, dropout, embedding on 2-D data layouts -----
def conv_net(placement, data, whole):
    flow.manual_seed(3)
    m = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Dropout(0.3), nn.Linear(16, 5)).to_global(placement, whole)
    emb = nn.Embedding(10, 3).to_global(placement, whole)
    opt = flow.optim.SGD(list(m.parameters()) + list(emb.parameters()), lr=0.1, momentum=0.9)
    got = []
    for s in range(3):
        flow.manual_seed(20 + s)
        x = flow.randn(6, 2, 4, 4, placement=placement, sbp=data)
        ids = flow.randint(0, 10, (6,), placement=placement, sbp=data)
        y = flow.randint(0, 5, (6,), placement=placement, sbp=data)
        logits = m(x) + emb(ids).sum(1, keepdim=True)
        loss = nn.functional.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        got.append(float(loss.numpy()))
    m.eval()
    evaluated = m(flow.ones(2, 2, 4, 4, placement=placement, sbp=whole)).numpy()  # with the running statistics
    return got, [t.numpy() for t in list(m.parameters()) + list(m.buffers())], evaluated


one_run = conv_net(flow.placement("cpu", [0]), B, B)
for data in ((S0, B), (S0, S0), (B, S0)):
    mesh_run = conv_net(MESH, data, (B, B))
    np.testing.assert_allclose(mesh_run[0], one_run[0], rtol=1e-5, err_msg=str(data))
    for got, want in zip(mesh_run[1], one_run[1]):  # the buffers: running mean and variance, batches seen
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=str(data))
    np.testing.assert_allclose(mesh_run[2], one_run[2], rtol=1e-4, atol=1e-5, err_msg=str(data))
ok("conv, batch norm, pooling, dropout, embedding on 2-D data layouts == 1 rank")

report = str(flow.explain())
if RANK == 0:
    assert "mesh axis 0: P -> B all-reduce over {0,2} {1,3}" in report, report  # data-parallel gradients
    assert "gradient" in report
ok("explain lists the per-axis steps")
