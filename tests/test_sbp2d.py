"""2-D (n-D) SBP on n-D placements, in one process: placements with a hierarchy, n-D signatures derived per mesh axis
from the ops' 1-D ones, the legacy form (`flow.scope.placement(tag, ids, hierarchy)`, `get_variable(
parallel_distribution=)`, `flow.hierarchical_parallel_cast`) training a data x model parallel MLP on a 2 x 2 mesh of
in-process devices exactly as one device does, `validate` on a 2 x 2 mesh, and `visualize_sharding` against the
runtime's blocks. The global-tensor API on 4 ranks: tests/test_global_2d_mpi.py; boxing: tests/test_boxing_nd.py."""
import itertools
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat._global import sharding_view
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import Job
from oneflow_compat.ir.placement import Placement
from oneflow_compat.ops import registry
from oneflow_compat.passes import sbp_infer
from oneflow_compat.tools import explain as explain_mod
from oneflow_compat.tools import validate

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_scripts"))
import legacy_2d  # noqa: E402  (the MLP job, shared with the run across processes)
from legacy_2d import IN, N, OUT  # noqa: E402


# --- placements ------------------------------------------------------------------------------------------------------
def test_nd_placements_ranks_hierarchy_equality_and_repr():
    mesh = flow.placement("cuda", ranks=[[0, 1], [2, 3]])
    assert mesh.ranks.tolist() == [[0, 1], [2, 3]] and tuple(mesh.hierarchy) == (2, 2)
    assert repr(mesh.hierarchy) == "oneflow.Size([2, 2])"
    assert repr(mesh) == 'oneflow.placement(type="cuda", ranks=[[0, 1], [2, 3]])'
    assert mesh == flow.placement("cuda", np.array([[0, 1], [2, 3]])) and hash(mesh) == hash(
        flow.placement(type="cuda", ranks=[[0, 1], [2, 3]]))
    assert mesh != flow.placement("cuda", [0, 1, 2, 3]) and mesh != flow.placement("cuda", [[0, 1, 2, 3]])
    assert mesh != flow.placement("cuda", [[0], [1], [2], [3]]) and mesh != flow.placement("cpu", [[0, 1], [2, 3]])
    assert tuple(flow.placement("cpu", [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]).hierarchy) == (2, 2, 2)
    # OneFlow's placement is its set of ranks laid out in the hierarchy in sorted order (ParallelDesc sorts them):
    # ranks=[[0, 2], [1, 3]] is the mesh [[0, 1], [2, 3]], and shows so
    shuffled = flow.placement("cpu", [[0, 2], [1, 3]])
    assert shuffled == flow.placement("cpu", [[0, 1], [2, 3]]) and shuffled.ranks.tolist() == [[0, 1], [2, 3]]
    assert repr(shuffled) == 'oneflow.placement(type="cpu", ranks=[[0, 1], [2, 3]])'
    assert flow.placement("cpu", [3, 1]).ranks.tolist() == [1, 3] and flow.placement("cpu", {0: [1, 0]}).ranks.tolist() == [0, 1]
    ir = mesh.ir()
    assert ir.hierarchy == (2, 2) and ir.is_nd and ir.pairs == ((0, 0), (1, 0), (2, 0), (3, 0))
    assert ir != ir.flat() and ir.flat().hierarchy == (4,) and ir.flat().pairs == ir.pairs
    with pytest.raises(ValueError, match="not rectangular"):
        flow.placement("cpu", [[0, 1], [2]])
    with pytest.raises(ValueError, match=r"does not fit the placement's 4 devices"):
        Placement("cpu", [(0, i) for i in range(4)], hierarchy=(3, 2))


def test_sbp_tuples_one_symbol_per_placement_dimension():
    mesh = flow.placement("cpu", [[0]])
    t = flow.randn(3, 4, placement=mesh, sbp=(flow.sbp.broadcast, flow.sbp.split(1)))
    assert t.sbp == (flow.sbp.broadcast, flow.sbp.split(1)) and t.placement == mesh
    assert "sbp=(oneflow.sbp.broadcast, oneflow.sbp.split(dim=1))" in repr(t)
    assert t.to_local().shape == (3, 4) and t.numpy().shape == (3, 4)
    u = t.to_global(sbp=(flow.sbp.split(0), flow.sbp.partial_sum))
    np.testing.assert_array_equal(u.numpy(), t.numpy())
    with pytest.raises(ValueError, match="3 sbp symbols .* with 2 dimensions"):
        t.to_global(sbp=(flow.sbp.broadcast,) * 3)


def test_functions_that_make_broadcast_helpers_take_meshes():
    """Functions that lay a value out as broadcast on a tensor's placement (flow.tensor(placement=), where/masked_fill
    with a number, load_state_dict of local or loaded values) give one symbol per mesh axis."""
    mesh = flow.placement("cpu", [[0]])
    b, s0, s1 = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)
    t = flow.tensor([[1.0, -2.0], [3.0, -4.0]], placement=mesh, sbp=(s0, s1))
    assert t.sbp == (s0, s1) and t.placement == mesh
    np.testing.assert_array_equal(t.numpy(), [[1, -2], [3, -4]])
    np.testing.assert_array_equal(flow.where(t > 0, t, 0.5).numpy(), [[1, 0.5], [3, 0.5]])
    np.testing.assert_array_equal(t.masked_fill(t < 0, 9.0).numpy(), [[1, 9], [3, 9]])
    m = flow.nn.Linear(2, 2).to_global(mesh, (b, b))
    with flow.no_grad():
        m.weight.data = m.weight.data.to_global(sbp=(b, s0))
    m.load_state_dict({"weight": flow.tensor([[1.0, 2.0], [3.0, 4.0]]), "bias": flow.zeros(2)})
    assert m.weight.sbp == (b, s0)
    np.testing.assert_array_equal(m(t).numpy(), np.array([[1, -2], [3, -4]]) @ np.array([[1, 2], [3, 4]]).T)


def test_random_values_do_not_depend_on_the_mesh():
    flow.manual_seed(3)
    a = flow.randn(5, 7, placement=flow.placement("cpu", [[0]]), sbp=(flow.sbp.split(0), flow.sbp.split(1)))
    flow.manual_seed(3)
    b = flow.randn(5, 7, placement=flow.placement("cpu", [0]), sbp=flow.sbp.broadcast)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_normal_draws_mean_and_std_on_any_layout():
    """flow.normal(mean, std, size) (OneFlow 0.9's functional normal): size an int or a shape, N(mean, std^2), the
    same logical value on a mesh as on one device, `out` filled and returned; bad std / dtype named."""
    flow.manual_seed(7)
    big = flow.normal(3.0, 0.5, (200, 100)).numpy()
    assert big.dtype == np.float32 and big.shape == (200, 100)
    assert abs(big.mean() - 3.0) < 0.01 and abs(big.std() - 0.5) < 0.01  # 20000 draws: 6 standard errors
    assert tuple(flow.normal(0.0, 1.0, 4).shape) == (4,)
    flow.manual_seed(7)
    a = flow.normal(-1.0, 2.0, (5, 7), placement=flow.placement("cpu", [[0]]),
                    sbp=(flow.sbp.split(0), flow.sbp.split(1)))
    flow.manual_seed(7)
    b = flow.normal(-1.0, 2.0, (5, 7), placement=flow.placement("cpu", [0]), sbp=flow.sbp.broadcast)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.sbp == (flow.sbp.split(0), flow.sbp.split(1))
    out = flow.zeros(3, 2, dtype=flow.float64)
    flow.manual_seed(1)
    got = flow.normal(0.0, 1.0, (3, 2), out=out, dtype=flow.float64)
    flow.manual_seed(1)
    np.testing.assert_array_equal(out.numpy(), flow.randn(3, 2, dtype=flow.float64).numpy())
    assert got is out
    with pytest.raises(ValueError, match="std must be >= 0, got -1.0"):
        flow.normal(0.0, -1.0, 3)
    # OneFlow 0.9's NotImplementedError and words (core/functional/impl/random_functor.cpp NormalFunctor)
    with pytest.raises(NotImplementedError, match=r"^Only support float and double in normal\(\)\.$"):
        flow.normal(0.0, 1.0, 3, dtype=flow.int64)


# --- signatures ------------------------------------------------------------------------------------------------------
def _op_on(mesh_shape, op_type, input_shapes, attrs=None, input_sbps=None):
    n = int(np.prod(mesh_shape))
    pl = Placement("cpu", [(0, i) for i in range(n)], hierarchy=mesh_shape)
    job = Job("sigs", "predict", None)
    ctx = builder.BuildContext(job, None, pl, "consistent")
    with builder.Scoped(ctx):
        xs = []
        for k, shape in enumerate(input_shapes):
            attrs_in = {"shape": shape, "dtype": dtypes.float32, "kind": "numpy", "batch_axis": None, "index": k}
            hints = {}
            if input_sbps is not None:
                attrs_in["sbp"] = input_sbps[k]
                hints = {0: input_sbps[k]}
            xs.append(registry.new_op("input", [], attrs_in, out_hints=hints).outputs[0])
        op = registry.new_op(op_type, xs, attrs or {})
    return job, op


def test_nd_signatures_are_one_declared_signature_per_mesh_axis():
    _, op = _op_on((2, 2), "matmul", [(6, 4), (4, 8)], {"transpose_a": False, "transpose_b": False, "alpha": 1.0})
    one_d = op.defn.sbp(op)
    sigs = sbp_infer.signatures(op)
    assert len(sigs) == len(one_d) ** 2
    # the page's example: (broadcast, split(0)) x (split(1), broadcast) = (split(1), split(0))
    page = ((S.nd((S.B, S.S(0)), (2, 2)), S.nd((S.S(1), S.B), (2, 2))), (S.nd((S.S(1), S.S(0)), (2, 2)),))
    assert page in sigs
    for ins, outs in sigs:  # each is a declared 1-D signature on every axis
        for k in range(2):
            assert ((ins[0][k], ins[1][k]), (outs[0][k],)) in [(tuple(a), tuple(b)) for a, b in one_d]
    assert sigs[0][0] == tuple(S.nd((s, s), (2, 2)) for s in one_d[0][0])  # the first preferred on both axes


def test_inference_picks_the_signature_that_reads_inputs_as_they_lie():
    ins = [S.nd((S.B, S.S(0)), (2, 2)), S.nd((S.S(1), S.B), (2, 2))]
    job, op = _op_on((2, 2), "matmul", [(6, 4), (4, 8)], {"transpose_a": False, "transpose_b": False,
                                                          "alpha": 1.0}, ins)
    sbp_infer.infer(job, exact_first=True)
    assert op.sbp_in == ins and op.sbp_out == [S.nd((S.S(1), S.S(0)), (2, 2))]


@pytest.mark.parametrize("op_type", ["matmul", "add", "reduce_sum", "softmax", "gather",
                                     "sparse_softmax_cross_entropy", "conv2d", "layer_norm"])
def test_validate_brute_forces_signatures_on_a_2x2_mesh(op_type):
    checks = [c for c in validate.check_examples(op_type, ((2, 2),)) if c.devices > 1]
    assert checks and all(c.mesh == (2, 2) for c in checks)
    assert [str(c) for c in checks if not c.ok] == []
    # pairs of declared signatures were run for the first example row (at least 2 x 2 of them)
    first = [c for c in checks if c.example.startswith("0")]
    assert len({c.signature for c in first}) >= 4


def test_validate_catches_a_wrong_signature_on_the_mesh_only_where_it_is_used():
    def sigs(op):  # softmax along axis 1 cannot be split along axis 1
        return [((S.S(0),), (S.S(0),)), ((S.S(1),), (S.S(1),)), ((S.B,), (S.B,))]

    def softmax(xp, x):
        e = xp.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    defn = registry.OpDef("sbp2d_test_bogus_softmax", infer=lambda op: [op.inputs[0].meta], kernel=softmax, sbp=sigs)
    registry.register(defn)
    try:
        checks = validate.check_op(defn.type, [np.random.default_rng(0).standard_normal((5, 7))], {}, ((2, 2),))
    finally:
        registry._REGISTRY.pop(defn.type)
    bad = sorted(c.signature for c in checks if not c.ok)
    assert bad == sorted("((%s, %s))->((%s, %s))" % (a, b, a, b) for a, b in itertools.product(
        ["S(0)", "S(1)", "B"], repeat=2) if "S(1)" in (a, b))


def test_visualize_sharding_draws_the_runtime_blocks():
    for mesh_ranks, mesh in (([[0, 1], [2, 3]], (2, 2)), ([[0, 1, 2], [3, 4, 5]], (2, 3))):
        pl = flow.placement("cpu", mesh_ranks)
        symbols = [flow.sbp.split(0), flow.sbp.split(1), flow.sbp.broadcast, flow.sbp.partial_sum]
        for pair in itertools.product(symbols, repeat=2):
            nd = S.nd([s._ir for s in pair], mesh)
            for ranges, holders, _ in sharding_view.sharding_blocks((7, 5), pl, pair):
                for r in holders:
                    assert S.region((7, 5), nd, r, pl.ir().parallel_num) == ranges, (pair, r)


# --- the legacy form: a data x model parallel MLP on a 2 x 2 mesh of in-process devices ---------------------------
# (the job is tests/mpi_scripts/legacy_2d.py's, which tests/test_global_2d_mpi.py also runs across processes)
def _train_legacy(devices, hierarchy, steps=20, grad_mode="manual"):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    losses, weights = legacy_2d.train(legacy_2d.hybrid_mlp_job("0:0-%d" % (devices - 1), hierarchy, grad_mode),
                                      steps)
    return losses, weights, explain_mod.explain_session()


def _numpy_mlp(steps=20):
    """The same 20 SGD-momentum steps written in numpy (initial weights: the job's own, read from one device)."""
    _, w0, _ = _train_legacy(1, None, steps=0)
    W1, c1, W2 = w0["w1"].astype(np.float64), w0["b1"].astype(np.float64), w0["w2"].astype(np.float64)
    c2 = w0["b2"].astype(np.float64)
    vel = [np.zeros_like(W1), np.zeros_like(c1), np.zeros_like(W2), np.zeros_like(c2)]
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        x = rng.standard_normal((N, IN)).astype(np.float32).astype(np.float64)
        y = rng.integers(0, OUT, N)
        hpre = x @ W1 + c1
        hh = np.maximum(hpre, 0)
        z = hh @ W2 + c2
        e = np.exp(z - z.max(1, keepdims=True))
        p = e / e.sum(1, keepdims=True)
        losses.append(-np.log(p[np.arange(N), y]).mean())
        dz = p.copy()
        dz[np.arange(N), y] -= 1
        dz /= N
        dh = (dz @ W2.T) * (hpre > 0)
        grads = [x.T @ dh, dh.sum(0), hh.T @ dz, dz.sum(0)]
        for k, (w, g) in enumerate(zip((W1, c1, W2, c2), grads)):
            vel[k] = 0.9 * vel[k] - 0.1 * g  # OneFlow's momentum: v = beta v - lr g; w += v
            w += vel[k]
    return losses, {"w1": W1, "b1": c1, "w2": W2, "b2": c2}


@pytest.fixture(scope="module")
def one_device():
    return _train_legacy(1, None)


@pytest.mark.parametrize("grad_mode", ["manual", "restore", "identity"])
def test_legacy_hybrid_mlp_on_a_2x2_mesh_equals_one_device(one_device, grad_mode):
    losses, weights, report = _train_legacy(4, (2, 2), grad_mode=grad_mode)
    np.testing.assert_allclose(losses, one_device[0], rtol=1e-5)
    for name, w in one_device[1].items():
        np.testing.assert_allclose(weights[name], w, rtol=1e-5, atol=1e-6, err_msg=name)
    text = str(report)
    # the weights live as asked; their data-parallel gradients are all-reduced along mesh axis 0 only
    op = report.op("w1")
    assert op.sbp_out == [S.nd((S.B, S.S(1)), (2, 2))]
    assert "all-reduce(axis 0)" in text and "mesh axis 0: P -> B all-reduce over {0:0,0:2} {0:1,0:3}" in text
    # the forward cast: the partial sums of the row-parallel matmul all-reduced along the model axis
    assert "mesh axis 1: P -> B all-reduce over {0:0,0:1} {0:2,0:3}" in text


def test_the_legacy_hybrid_mlp_is_the_numpy_mlp(one_device):
    losses, weights = _numpy_mlp()
    np.testing.assert_allclose(one_device[0], losses, rtol=1e-5)
    for name, w in weights.items():
        np.testing.assert_allclose(one_device[1][name], w, rtol=1e-4, atol=1e-6, err_msg=name)


def _legacy_batch_norm(devices, hierarchy, steps=4):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    cfg = flow.function_config()
    cfg.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=cfg)
    def job(x: tp.Numpy.Placeholder((6, 4, 5)), y: tp.Numpy.Placeholder((6,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-%d" % (devices - 1), hierarchy):
            if hierarchy:
                x = flow.hierarchical_parallel_cast(x, parallel_distribution=["S(0)", "B"])
            h = flow.reshape(flow.layers.batch_normalization(x, axis=1, name="bn"), (6, 20))
            w = flow.get_variable("w", (20, 3), initializer=flow.random_normal_initializer(stddev=0.3),
                                  random_seed=3, parallel_distribution=["B", "S(1)"] if hierarchy else [])
            loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(y, flow.matmul(h, w)))
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    rng = np.random.default_rng(0)
    losses = [float(job(rng.standard_normal((6, 4, 5)).astype(np.float32),
                        rng.integers(0, 3, 6).astype(np.int32)).reshape(-1)[0]) for _ in range(steps)]
    return losses, {k: v.numpy() for k, v in flow.get_all_variables().items()}


def test_legacy_batch_norm_on_a_2x2_mesh_equals_one_device():
    """Batch norm's beta / gamma and moving statistics lie (B, B): each step updates them once for the devices of
    the process that share them, its moving averages where they lie."""
    losses, weights = _legacy_batch_norm(4, (2, 2))
    want_losses, want = _legacy_batch_norm(1, None)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    assert {"bn-beta", "bn-gamma", "bn-moving_mean", "bn-moving_variance", "w"} <= set(want) == set(weights)
    for name, w in want.items():
        np.testing.assert_allclose(weights[name], w, rtol=1e-5, atol=1e-6, err_msg=name)
    assert np.abs(want["bn-moving_mean"]).max() > 0  # the statistics moved


def test_hierarchical_parallel_cast_gradient_modes_pin_the_gradient_layout():
    """restore: the gradient is cast like the forward input lay; manual: to grad_parallel_distribution; identity:
    left as it comes (OneFlow v0.4.0 hierarchical_parallel_cast_op.cpp)."""
    layouts = {}
    for mode in ("restore", "manual", "identity"):
        _, _, report = _train_legacy(4, (2, 2), steps=1, grad_mode=mode)
        casts = [o for o in report.ops if o.type.startswith("hierarchical_parallel_cast") and o.section == "backward"]
        layouts[mode] = [(o.type, o.sbp_out) for o in casts]
    mesh = (2, 2)
    assert layouts["identity"] == []  # (the input's cast has no gradient to cast: it is a placeholder's)
    assert layouts["manual"] == [("hierarchical_parallel_cast", [S.nd((S.S(0), S.B), mesh)])]
    # restore: the gradient takes the layout the matmul produced, partial sums along the model axis
    assert layouts["restore"] == [("hierarchical_parallel_cast_like", [S.nd((S.S(0), S.P), mesh)])]


def test_bad_parallel_distributions_are_named():
    flow.clear_default_session()
    flow.config.cpu_device_num(4)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 4))):
        with flow.scope.placement("cpu", "0:0-3", (2, 2)):
            return flow.hierarchical_parallel_cast(x, parallel_distribution=["S(0)"])

    from oneflow_compat import distribute as dist
    from oneflow_compat.ir.placement import Placement as IrPlacement

    mesh = IrPlacement("cpu", [(0, i) for i in range(4)], hierarchy=(2, 2))
    assert dist.to_parallel_distribution("S(0), B", mesh, "t") == S.nd((S.S(0), S.B), (2, 2))  # v0.4.0's string
    assert dist.to_parallel_distribution([dist.split(1), "P"], mesh, "t") == S.nd((S.S(1), S.P), (2, 2))
    assert dist.to_parallel_distribution([], mesh, "t") is None
    with pytest.raises(ValueError, match=r"parallel_distribution \['S\(0\)'\] has 1 entry, but the placement "
                                         r".* has 2 dimensions \(hierarchy \(2, 2\)\)"):
        job(np.zeros((4, 4), np.float32))
    flow.clear_default_session()
    with pytest.raises(ValueError, match="does not fit the placement's 4 devices"):
        flow.scope.placement("cpu", "0:0-3", (3, 2))


def test_legacy_checkpoints_move_between_the_mesh_and_one_device(tmp_path):
    """flow.checkpoint.save of variables in 2-D layouts (B, S(1)), (B, S(0)), (B, B) writes logical values: one
    device loads them, and the mesh loads a one-device checkpoint back, each piece where it lies."""
    _, trained, _ = _train_legacy(4, (2, 2), steps=3)
    flow.checkpoint.save(str(tmp_path / "mesh"))
    _train_legacy(1, None, steps=0)
    flow.load_variables(flow.checkpoint.get(str(tmp_path / "mesh")))
    got = {k: v.numpy() for k, v in flow.get_all_variables().items()}
    assert set(got) == set(trained) and "w1-momentum" in got
    for name, w in trained.items():
        np.testing.assert_array_equal(got[name], w, err_msg=name)
    flow.checkpoint.save(str(tmp_path / "one"))
    _train_legacy(4, (2, 2), steps=0)
    flow.load_variables(flow.checkpoint.get(str(tmp_path / "one")))
    for name, v in flow.get_all_variables().items():
        np.testing.assert_array_equal(v.numpy(), trained[name], err_msg=name)
