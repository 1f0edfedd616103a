"""The nnextra helper's part of issue 21: OneFlow 0.9's CELU, SELU, Hardshrink, Softshrink, Softsign, GLU, Threshold
and QuickGELU (modules and `nn.functional` / `_C` forms), `flow.cumprod` and `flow.fmod` (and the Tensor methods):
forward and backward against PyTorch in float64 and float32, reprs as OneFlow prints them, errors, `nn.Graph` equal
to eager, and 2 ranks equal to 1 (tests/mpi_scripts/nn_extra_global.py under mpiexec)."""
import os
import re
import sys

import numpy as np
import pytest

import oneflow_compat as flow

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nn_reference as ref  # noqa: E402

F = flow.nn.functional


def _x(dtype, shape=(4, 3, 6), scale=3.0, seed=0):
    x = np.random.default_rng(seed).uniform(-scale, scale, shape)
    for k in (0.0, 0.5, -0.5, 1.0, -1.0, 0.3):  # off the kinks: the gradient there is a convention
        x = np.where(np.abs(x - k) < 0.05, x + 0.2, x)
    return x.astype(dtype)


def _torch():
    return pytest.importorskip("torch")


def _cases(torch):
    TF = torch.nn.functional
    return {
        "celu": (lambda x: F.celu(x, 0.6), lambda x: TF.celu(x, 0.6)),
        "celu_default": (F.celu, TF.celu),
        "selu": (F.selu, TF.selu),
        "hardshrink": (F.hardshrink, TF.hardshrink),
        "hardshrink_1": (lambda x: F.hardshrink(x, lambd=1.0), lambda x: TF.hardshrink(x, 1.0)),
        "softshrink": (F.softshrink, TF.softshrink),
        "softshrink_1": (lambda x: F.softshrink(x, alpha=1.0), lambda x: TF.softshrink(x, 1.0)),
        "softsign": (F.softsign, TF.softsign),
        "threshold": (lambda x: F.threshold(x, 0.3, -2.0), lambda x: TF.threshold(x, 0.3, -2.0)),
        "quick_gelu": (F.quick_gelu, lambda x: x * torch.sigmoid(1.702 * x)),
        "glu_last": (F.glu, TF.glu),
        "glu_dim0": (lambda x: F.glu(x, 0), lambda x: TF.glu(x, 0)),
        "cumprod_1": (lambda x: flow.cumprod(x, 1), lambda x: torch.cumprod(x, 1)),
        "cumprod_neg": (lambda x: x.cumprod(-1), lambda x: torch.cumprod(x, -1)),
        "fmod_scalar": (lambda x: flow.fmod(x, 1.3), lambda x: torch.fmod(x, 1.3)),
        "fmod_method_neg": (lambda x: x.fmod(-0.7), lambda x: torch.fmod(x, -0.7)),
        "_C.celu": (lambda x: flow._C.celu(x, alpha=2.0), lambda x: TF.celu(x, 2.0)),
        "Tensor.selu": (lambda x: x.selu(), TF.selu),
        "Tensor.softsign": (lambda x: x.softsign(), TF.softsign),
        "_C.softshrink": (lambda x: flow._C.softshrink(x, alpha=0.7), lambda x: TF.softshrink(x, 0.7)),
    }


CASE_NAMES = ["celu", "celu_default", "selu", "hardshrink", "hardshrink_1", "softshrink", "softshrink_1", "softsign",
              "threshold", "quick_gelu", "glu_last", "glu_dim0", "cumprod_1", "cumprod_neg", "fmod_scalar",
              "fmod_method_neg", "_C.celu", "_C.softshrink", "Tensor.selu", "Tensor.softsign"]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", CASE_NAMES)
def test_functional_forms_match_torch(name, dtype):
    torch = _torch()
    fn, tfn = _cases(torch)[name]
    x = _x(dtype)
    if name.startswith("cumprod"):
        x = x / dtype(2.0)  # products of 6 factors of about 1
    if name.startswith("fmod"):  # off the jumps where x / other crosses an integer
        q = x / dtype(1.3 if "scalar" in name else -0.7)
        x = np.where(np.abs(q - np.round(q)) < 0.05, x + dtype(0.1), x).astype(dtype)
    outs, grads, rs = ref.eager(fn, [x])
    t_outs, t_grads = ref.torch_ref(tfn, [x], rs)
    ref.assert_close(outs, t_outs, dtype, name)
    ref.assert_close(grads, t_grads, dtype, name + " grad")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fmod_of_two_tensors_broadcasts_and_differentiates_both_as_torch(dtype):
    torch = _torch()
    rng = np.random.default_rng(1)
    b = (rng.uniform(0.5, 2.0, (5, 7)) * rng.choice([-1, 1], (5, 7))).astype(dtype)
    # a / b = an integer plus a fraction in (0.1, 0.9) of either sign: off the jumps, quotients of both signs
    q = rng.integers(-3, 4, (4, 5, 7)) + rng.uniform(0.1, 0.9, (4, 5, 7)) * rng.choice([-1, 1], (4, 5, 7))
    a = (q * b).astype(dtype)
    outs, grads, rs = ref.eager(lambda x, y: flow.fmod(x, y), [a, b])
    t_outs, t_grads = ref.torch_ref(torch.fmod, [a, b], rs)
    ref.assert_close(outs, t_outs, dtype, "fmod")
    ref.assert_close(grads, t_grads, dtype, "fmod grads")


def test_fmod_takes_the_sign_of_the_dividend_and_keeps_integers():
    x = flow.tensor(np.array([-7, -3, 3, 7], np.int64))
    y = flow.fmod(x, flow.tensor(np.array([2, -2, 2, -2], np.int64)))
    assert y.dtype == flow.int64
    np.testing.assert_array_equal(y.numpy(), [-1, -1, 1, 1])
    np.testing.assert_allclose(flow.fmod(flow.tensor([-3.5, 3.5]), 2.0).numpy(), [-1.5, 1.5])
    with pytest.raises(ZeroDivisionError, match="fmod: integer division by zero"):
        flow.fmod(x, flow.tensor(np.array([1, 0, 1, 1], np.int64))).numpy()
    with pytest.raises(TypeError, match="fmod\\(\\): input must be a Tensor"):
        flow.fmod(3.0, x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cumprod_gradient_through_zeros_matches_torch(dtype):
    torch = _torch()
    x = np.random.default_rng(4).standard_normal((5, 7)).astype(dtype)
    x[0, 2] = 0.0          # one zero in a line
    x[1, 1] = x[1, 4] = 0  # two zeros: the first one's gradient is a product past it, the second's is 0
    x[2, 0] = 0.0          # a zero at the start
    x[3, 6] = 0.0          # a zero at the end
    outs, grads, rs = ref.eager(lambda t: flow.cumprod(t, 1), [x])
    t_outs, t_grads = ref.torch_ref(lambda t: torch.cumprod(t, 1), [x], rs)
    ref.assert_close(outs, t_outs, dtype, "cumprod")
    ref.assert_close(grads, t_grads, dtype, "cumprod grad through zeros")


def test_cumprod_of_integers_is_int64_and_checks_its_dim():
    y = flow.cumprod(flow.tensor(np.array([[1, 2, 3], [4, 5, 6]], np.int32)), dim=1)
    assert y.dtype == flow.int64
    np.testing.assert_array_equal(y.numpy(), [[1, 2, 6], [4, 20, 120]])
    with pytest.raises(IndexError, match=re.escape("cumprod(): Dimension out of range (expected to be in range of "
                                                   "[-2, 1], but got 2)")):
        flow.cumprod(flow.ones(2, 3), 2)


MODULES = [
    (lambda: flow.nn.CELU(), "CELU(alpha=1.0)", "CELU", {}),
    (lambda: flow.nn.CELU(0.5, inplace=True), "CELU(alpha=0.5, inplace=True)", "CELU", {"alpha": 0.5}),
    (lambda: flow.nn.SELU(), "SELU()", "SELU", {}),
    (lambda: flow.nn.Hardshrink(), "Hardshrink(lambd=0.5)", "Hardshrink", {}),
    (lambda: flow.nn.Softshrink(1.0), "Softshrink(lambd=1.0)", "Softshrink", {"lambd": 1.0}),
    (lambda: flow.nn.Softsign(), "Softsign()", "Softsign", {}),
    (lambda: flow.nn.GLU(dim=0), "GLU()", "GLU", {"dim": 0}),
    (lambda: flow.nn.Threshold(0.3, 5.0), "Threshold()", "Threshold", {"threshold": 0.3, "value": 5.0}),
]


@pytest.mark.parametrize("k", range(len(MODULES)))
def test_modules_match_torch_and_print_as_oneflow(k):
    torch = _torch()
    make, text, tname, targs = MODULES[k]
    m = make()
    assert repr(m) == text
    x = _x(np.float32)
    if k == 1:  # inplace=True writes the input (nothing records gradients here)
        xt = flow.tensor(x.copy())
        assert m(xt) is xt
        np.testing.assert_allclose(xt.numpy(), torch.nn.functional.celu(torch.tensor(x), 0.5).numpy(), rtol=1e-6)
        return
    outs, grads, rs = ref.eager(m, [x])
    t_outs, t_grads = ref.torch_ref(getattr(torch.nn, tname)(**targs), [x], rs)
    ref.assert_close(outs, t_outs, np.float32, text)
    ref.assert_close(grads, t_grads, np.float32, text + " grad")


def test_quick_gelu_module_and_the_import_paths():
    x = _x(np.float64)
    y = flow.nn.QuickGELU()(flow.tensor(x)).numpy()
    np.testing.assert_allclose(y, x / (1 + np.exp(-1.702 * x)), rtol=1e-12)
    from oneflow_compat.nn.modules import activation

    for name in ("CELU", "SELU", "Hardshrink", "Softshrink", "Softsign", "GLU", "Threshold", "QuickGELU"):
        assert getattr(activation, name) is getattr(flow.nn, name)


def test_bad_arguments_raise_clear_errors():
    x = flow.tensor(_x(np.float32, (2, 5)))
    with pytest.raises(ValueError, match="Halving dimension must be even, but dimension 1 is size 5"):
        F.glu(x)
    with pytest.raises(ValueError, match="hardshrink: lambd must be non-negative, got -1"):
        F.hardshrink(x, -1)
    with pytest.raises(ValueError, match="celu: alpha must not be 0"):
        F.celu(x, 0.0)
    with pytest.raises(TypeError, match=re.escape("selu(): expected a Tensor, got list")):
        F.selu([1.0, 2.0])
    # an integer tensor is promoted to the default floating dtype first, as the other activations do
    assert F.selu(flow.tensor(np.array([1, 2], np.int64))).dtype == flow.float32


def test_the_new_ops_in_a_graph_equal_eager():
    class Net(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = flow.nn.Linear(5, 8)
            self.acts = flow.nn.Sequential(flow.nn.CELU(0.5), flow.nn.SELU(), flow.nn.Softsign(),
                                           flow.nn.Hardshrink(0.1), flow.nn.Softshrink(0.05), flow.nn.QuickGELU(),
                                           flow.nn.Threshold(-0.5, 0.2), flow.nn.GLU())

        def forward(self, x):
            y = self.acts(self.lin(x))
            return flow.fmod(flow.cumprod(y + 1.0, 1), 0.9)

    net = Net()
    opt = flow.optim.SGD(net.parameters(), lr=0.1)

    class Train(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.net = net
            self.add_optimizer(opt)

        def build(self, x):
            y = self.net(x)
            y.sum().backward()
            return y

    x = flow.tensor(_x(np.float32, (4, 5), scale=1.0))
    eager_y = net(x)
    eager_y.sum().backward()
    eager_grad = net.lin.weight.grad.numpy().copy()
    w0 = net.lin.weight.numpy().copy()
    net.zero_grad()
    graph_y = Train()(x).numpy()
    np.testing.assert_allclose(graph_y, eager_y.numpy(), rtol=1e-6, atol=1e-6)
    # the graph's step applied the same gradient (SGD, lr 0.1)
    np.testing.assert_allclose(net.lin.weight.numpy(), w0 - 0.1 * eager_grad, rtol=1e-5, atol=1e-6)


FOLDS = [((2, 3, 5, 6), dict(kernel_size=(2, 3))),
         ((3, 2, 7, 6), dict(kernel_size=(3, 2), dilation=(2, 1), padding=(1, 2), stride=(2, 3))),
         ((1, 4, 6, 6), dict(kernel_size=3, padding=1, stride=2))]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", range(len(FOLDS)))
def test_unfold_and_fold_match_torch(k, dtype):
    torch = _torch()
    shape, kw = FOLDS[k]
    x = _x(dtype, shape)
    outs, grads, rs = ref.eager(lambda t: F.unfold(t, **kw), [x])
    t_outs, t_grads = ref.torch_ref(lambda t: torch.nn.functional.unfold(t, **kw), [x], rs)
    ref.assert_close(outs, t_outs, dtype, "unfold")
    ref.assert_close(grads, t_grads, dtype, "unfold grad")
    cols = _x(dtype, t_outs[0].shape, seed=5)
    outs, grads, rs = ref.eager(lambda t: flow.nn.Fold(shape[2:], **kw)(t), [cols])
    t_outs, t_grads = ref.torch_ref(lambda t: torch.nn.Fold(shape[2:], **kw)(t), [cols], rs)
    ref.assert_close(outs, t_outs, dtype, "fold")
    ref.assert_close(grads, t_grads, dtype, "fold grad")


def test_fold_reprs_paths_and_errors():
    from oneflow_compat.nn.modules import fold

    assert fold.Fold is flow.nn.Fold and fold.Unfold is flow.nn.Unfold
    assert repr(flow.nn.Unfold(3, padding=1)) == "Unfold(kernel_size=3, dilation=1, padding=1, stride=1)"
    assert repr(flow.nn.Fold((4, 4), 3)) == "Fold(output_size=(4, 4), kernel_size=3, dilation=1, padding=0, stride=1)"
    y = flow._C.unfold(flow.ones(1, 1, 4, 4), [3, 3], [1, 1], [1, 1], [1, 1])
    assert tuple(y.shape) == (1, 9, 16)
    with pytest.raises(ValueError, match="input must be 4-D \\(N, C, H, W\\), got shape \\(2, 3, 4\\)"):
        F.unfold(flow.ones(2, 3, 4), 2)
    with pytest.raises(ValueError, match="input's axis 2 holds 10 blocks, but output_size \\(4, 4\\) with these "
                                         "parameters makes 2 x 2 = 4"):
        F.fold(flow.ones(1, 9, 10), (4, 4), 3)
    with pytest.raises(ValueError, match="is no multiple of the kernel's size 3 x 3"):
        F.fold(flow.ones(1, 10, 4), (4, 4), 3)


def test_unfold_fold_in_a_graph_equal_eager():
    unfold, fold = flow.nn.Unfold(3, padding=1), flow.nn.Fold((6, 5), 3, padding=1)

    class G(flow.nn.Graph):
        def build(self, x):
            return fold(unfold(x) * 0.5)

    x = flow.tensor(_x(np.float32, (2, 3, 6, 5)))
    np.testing.assert_allclose(G()(x).numpy(), fold(unfold(x) * 0.5).numpy(), rtol=1e-6, atol=1e-6)


def test_two_ranks_equal_one_rank():
    pytest.importorskip("mpi4py")
    from test_global_mpi import MPIEXEC, SCRIPTS, mpi

    if not MPIEXEC.exists():
        pytest.skip("no mpiexec beside %s" % sys.executable)
    done = mpi(2, SCRIPTS / "nn_extra_global.py", timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert done.stdout.rstrip().endswith("DONE"), done.stdout[-2000:]
    seen = re.findall(r"^OK (\S+) (.*)$", done.stdout, re.M)
    names = {n for n, _ in seen}
    assert names == {"CELU", "SELU", "Hardshrink", "Softshrink", "Softsign", "Threshold", "QuickGELU", "GLU",
                     "cumprod", "fmod", "Unfold", "Fold", "Tensor.unfold"}
    assert len(seen) == 38


# --- random generator states (flow.get_rng_state / set_rng_state, Generator.get_state / set_state) ------------------
def test_rng_state_replays_local_and_global_draws():
    flow.manual_seed(11)
    state = flow.get_rng_state()
    assert state.dtype == flow.uint8 and tuple(state.shape) == (32,)
    p = flow.placement("cpu", [0])
    a, ga = flow.randn(3, 4), flow.rand(5, placement=p, sbp=flow.sbp.broadcast)
    c = flow.randn(2)  # the stream moves on
    flow.set_rng_state(state)
    b, gb = flow.randn(3, 4), flow.rand(5, placement=p, sbp=flow.sbp.broadcast)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(ga.numpy(), gb.numpy())
    np.testing.assert_array_equal(c.numpy(), flow.randn(2).numpy())
    # OneFlow 0.9: get_rng_state() is default_generator.get_state() (python/oneflow/framework/generator.py)
    np.testing.assert_array_equal(flow.default_generator.get_state().numpy(), flow.get_rng_state().numpy())
    # the default generator's own 16 bytes (seed, draws) restore it alone
    s16 = flow.get_rng_state()[:16]
    d = flow.randn(4)
    flow.set_rng_state(s16)
    np.testing.assert_array_equal(d.numpy(), flow.randn(4).numpy())


def test_generator_state_round_trips_and_rejects_other_values():
    g = flow.Generator()
    g.manual_seed(5)
    st = g.get_state()
    assert st.dtype == flow.uint8 and tuple(st.shape) == (16,)
    np.testing.assert_array_equal(st.numpy()[:8].view("<i8"), [5])
    x = flow.randn(3, generator=g)
    g.set_state(st)
    np.testing.assert_array_equal(x.numpy(), flow.randn(3, generator=g).numpy())
    g.set_state(bytes(st.numpy()))  # bytes of a saved state too
    np.testing.assert_array_equal(x.numpy(), flow.randn(3, generator=g).numpy())
    with pytest.raises(ValueError, match="Generator.set_state: expected the uint8 state of 16 bytes"):
        g.set_state(flow.tensor(np.zeros(16, np.float32)))
    with pytest.raises(ValueError, match="set_rng_state: expected the uint8 state of 32 bytes"):
        flow.set_rng_state(flow.tensor(np.zeros(8, np.uint8)))


# --- SyncBatchNorm ------------------------------------------------------------------------------------------------
def test_sync_batchnorm_on_one_rank_is_batchnorm_and_converts_modules():
    from oneflow_compat.nn.modules import batchnorm

    assert batchnorm.SyncBatchNorm is flow.nn.SyncBatchNorm
    net = flow.nn.Sequential(flow.nn.Conv2d(3, 4, 3), flow.nn.BatchNorm2d(4),
                             flow.nn.Sequential(flow.nn.BatchNorm1d(4), flow.nn.ReLU()))
    bn = net[1]
    conv = flow.nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert conv is net and type(net[1]) is flow.nn.SyncBatchNorm and type(net[2][0]) is flow.nn.SyncBatchNorm
    assert net[1].weight is bn.weight and net[1].running_mean is bn.running_mean
    assert repr(net[1]) == "SyncBatchNorm(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    x = _x(np.float64, (6, 4, 3, 5))
    ref_bn, sync = flow.nn.BatchNorm2d(4).to(flow.float64), flow.nn.SyncBatchNorm(4).to(flow.float64)
    outs, grads, rs = ref.eager(ref_bn, [x])
    outs2, grads2, _ = ref.eager(sync, [x], rs)
    ref.assert_close(outs2, outs, np.float64, "SyncBatchNorm forward")
    ref.assert_close(grads2, grads, np.float64, "SyncBatchNorm backward")
    np.testing.assert_allclose(sync.running_var.numpy(), ref_bn.running_var.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match=re.escape("expected at least 2D input (got 1D input)")):
        sync(flow.ones(4))
    with pytest.raises(ValueError, match="process_group must be None"):
        flow.nn.SyncBatchNorm.convert_sync_batchnorm(net, process_group=[0, 1])


def test_sync_batchnorm_matches_torch_batchnorm():
    torch = _torch()
    x = _x(np.float32, (5, 3, 4, 2))
    outs, grads, rs = ref.eager(flow.nn.SyncBatchNorm(3), [x])
    t_outs, t_grads = ref.torch_ref(torch.nn.BatchNorm2d(3), [x], rs)
    ref.assert_close(outs, t_outs, np.float32, "SyncBatchNorm")
    ref.assert_close(grads, t_grads, np.float32, "SyncBatchNorm grad")


@pytest.mark.parametrize("ranks", [2, 3])
def test_sync_batchnorm_on_local_tensors_of_several_ranks_uses_the_whole_batch(ranks):
    pytest.importorskip("mpi4py")
    from test_global_mpi import MPIEXEC, SCRIPTS, mpi

    if not MPIEXEC.exists():
        pytest.skip("no mpiexec beside %s" % sys.executable)
    done = mpi(ranks, SCRIPTS / "sync_batchnorm.py", timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    out = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)  # (the GPU machine's ranks printed a colour reset at exit)
    assert re.findall(r"^OK .*$", out, re.M) == ["OK step 0", "OK step 1", "OK eval", "OK ddp", "OK graph"]
    assert out.rstrip().endswith("DONE"), done.stdout


def test_generator_pickles_with_its_state():
    import copy
    import pickle

    g = flow.Generator()
    g.manual_seed(9)
    flow.randn(2, generator=g)  # a draw: the counter moves
    assert set(g.__getstate__()) == {"device", "state"}
    h = pickle.loads(pickle.dumps(g))
    k = copy.deepcopy(g)
    want = flow.randn(5, generator=g).numpy()
    np.testing.assert_array_equal(flow.randn(5, generator=h).numpy(), want)
    np.testing.assert_array_equal(flow.randn(5, generator=k).numpy(), want)


def test_sync_batchnorm_in_a_graph_equals_eager():
    x = flow.tensor(_x(np.float32, (6, 3, 4, 4)))
    eager_bn, graph_bn = flow.nn.SyncBatchNorm(3, momentum=0.3), flow.nn.SyncBatchNorm(3, momentum=0.3)

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.bn = graph_bn

        def build(self, t):
            return self.bn(t)

    np.testing.assert_allclose(G()(x).numpy(), eager_bn(x).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(graph_bn.running_mean.numpy(), eager_bn.running_mean.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(graph_bn.running_var.numpy(), eager_bn.running_var.numpy(), rtol=1e-6)
