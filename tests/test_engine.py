"""One engine: the process context and its reset, the compile pipeline as the only runner of passes, nn.Graph
compiled with fusion, the eager fast path (straight-line plans, cached backward plans, lock-free local ops) and the
gradient buckets on one process. The multi-rank side (buckets across ranks, checks carrying feeds' shapes,
collectives per step) is tests/test_engine_mpi.py."""
import ast
import os
import re
import threading

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn
from oneflow_compat.runtime import buckets, context, executable, global_eager

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --- the process context ---------------------------------------------------------------------------------------------
def test_reset_forgets_the_legacy_session_eager_mode_env_and_api_choice():
    flow.enable_eager_execution(True)
    flow.env.ctrl_port(9999)
    ctx = context.get()
    old = ctx.session
    assert ctx.legacy_eager and ctx.env.ctrl_port == 9999 and ctx.api[0] == "legacy" and old is not None
    context.reset()
    assert ctx is context.get()  # one object for the process: modules may hold it
    assert ctx.session is None and not ctx.legacy_eager and ctx.env.ctrl_port is None and ctx.api == [None] * 3
    assert old.status == "closed"
    # the global-tensor API may be chosen now
    assert (flow.ones(2) + 1).numpy().tolist() == [2.0, 2.0]


def test_reset_forgets_the_global_session_plans_boxing_log_and_reports():
    x = flow.ones(2, 3)
    _ = (x * 2).sum()
    ctx = context.get()
    session = ctx.global_session
    assert session is not None and len(ctx.eager_plans) > 0 and ctx.api[0] == "global"
    context.reset()
    assert ctx.global_session is None and len(ctx.eager_plans) == 0 and len(ctx.boxing_log) == 0
    assert ctx.graph_reports == {} and ctx.buckets == {} and session.status == "closed"
    # a new session, a new runtime over the same process comm
    assert (flow.ones(2) * 3).numpy().tolist() == [3.0, 3.0]
    assert ctx.global_session is not session and ctx.global_session.kind == "global"


def test_no_test_pokes_private_process_globals():
    # the suite resets the context (tests/conftest.py); no test reaches into the modules' private state instead
    for name in sorted(os.listdir(os.path.join(ROOT, "tests"))):
        if name.endswith(".py") and name != "test_engine.py":
            with open(os.path.join(ROOT, "tests", name)) as f:
                text = f.read()
            for private in ("_EAGER_FLAG", "_SESSION", "_SITE", "_CACHE", "_BOXING_LOG", "_CHOICE", "_TRACES"):
                # whole names (XDG_CACHE_HOME is not _CACHE)
                assert not re.search(r"\b%s\b" % private, text), "%s pokes %s" % (name, private)


# --- one compile pipeline ----------------------------------------------------------------------------------------
def _imports(path):
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                yield node.module, a.name
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, None


def test_the_pipeline_is_the_only_place_that_runs_passes():
    passes = {"optimizer_pass", "prune", "sbp_infer", "fusion", "boxing", "grad_buckets", "autodiff"}
    bad = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, "oneflow_compat")):
        if os.path.basename(dirpath) == "passes":
            continue
        for f in files:
            if f.endswith(".py"):
                for module, name in _imports(os.path.join(dirpath, f)):
                    if module == "oneflow_compat.passes" and name in passes or \
                            module.startswith("oneflow_compat.passes.") and module.rsplit(".", 1)[1] in passes:
                        bad.append("%s imports %s %s" % (f, module, name or ""))
    assert bad == []


def _mlp(seed):
    flow.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))


def _data(n):
    rng = np.random.default_rng(5)
    return rng.random((n, 6), dtype=np.float32), rng.integers(0, 3, n)


@pytest.mark.parametrize("accumulation", [1, 2])
def test_nn_graph_is_compiled_with_fusion_and_trains_as_eager(accumulation):
    graph_model, eager_model = _mlp(1), _mlp(1)
    loss_fn = nn.CrossEntropyLoss()
    g_opt = flow.optim.SGD(graph_model.parameters(), lr=0.5, momentum=0.9)
    e_opt = flow.optim.SGD(eager_model.parameters(), lr=0.5, momentum=0.9)

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = graph_model
            self.add_optimizer(g_opt)
            self.config.set_gradient_accumulation_steps(accumulation)

        def build(self, x, y):
            loss = loss_fn(self.model(x), y)
            loss.backward()
            return loss

    graph = Train()
    for step in range(4):
        xs, ys = _data(8)
        x, y = flow.tensor(xs), flow.tensor(ys)
        graph_loss = graph(x, y)
        # eager: the same batch, the mean over the micro-batches' mean losses (as the graph's scaling)
        e_opt.zero_grad()
        parts = [loss_fn(eager_model(flow.tensor(a)), flow.tensor(b)) for a, b in
                 zip(np.split(xs, accumulation), np.split(ys, accumulation))]
        total = parts[0]
        for p in parts[1:]:
            total = total + p
        (total * (1.0 / accumulation)).backward()
        e_opt.step()
        np.testing.assert_allclose(graph_loss.numpy().reshape(-1), [float(p.numpy()) for p in parts], rtol=1e-5)
    for (name, p), q in zip(graph_model.named_parameters(), eager_model.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
    types = {op.type for op in graph._compiled.job.ops}
    assert "matmul_relu_grad" in types  # the fusion pass ran on the graph's job
    if accumulation > 1:  # the raw gradients summed over micro-batches are kept whole (fusion pins them)
        assert all(g.op in graph._compiled.job.ops for g in graph._compiled.job.raw_grads)


# --- the eager fast path -----------------------------------------------------------------------------------------
def test_local_ops_run_as_their_kernel_without_the_lock_and_agree_with_numpy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = flow.tensor(a)
    y = x * 2.0 + 1.0
    compiled = global_eager.compiled_op("scalar_mul", {"value": 2.0}, [x._value])
    assert compiled.lock_free and compiled.program.kernel is not None
    np.testing.assert_array_equal(y.numpy(), a * 2 + 1)
    # a plan with a boxing is no straight line
    assert executable.straight_line(compiled.exe.plan) is not None


def test_a_small_eager_matmul_runs_numpy_dot_itself_and_shares_its_plan_with_plain_attrs():
    a = np.arange(64, dtype=np.float32).reshape(8, 8) / 7
    x, w = flow.tensor(a), flow.tensor(a.T.copy())
    y = flow.matmul(x, w)
    np.testing.assert_array_equal(y.numpy(), np.matmul(a, a.T))
    # the surface's attrs (FrozenAttrs: a cache key found once) and a plain dict with the same items find one plan
    compiled = global_eager.compiled_op("matmul", {"transpose_a": False, "transpose_b": False, "alpha": 1.0},
                                        [x._value, w._value])
    # numpy.dot's C function itself (without numpy's __array_function__ dispatcher in front)
    assert compiled.lock_free and compiled.program.kernel is getattr(np.dot, "_implementation", np.dot)
    assert sum(1 for key in context.get().eager_plans if key[0] == "matmul") == 1
    np.testing.assert_array_equal(flow.matmul(x, w, transpose_b=True).numpy(), np.matmul(a, a))


def test_local_ops_from_several_threads_give_each_its_own_results():
    results, errors = {}, []

    def work(k):
        try:
            x = flow.tensor(np.full((4, 4), float(k), np.float32))
            out = x
            for _ in range(200):
                out = flow.matmul(out, x) * (1.0 / (4 * k)) + 0.0
            results[k] = out.numpy()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for k in (1, 2, 3):
        np.testing.assert_allclose(results[k], np.full((4, 4), float(k), np.float32), rtol=1e-5)


def test_backward_plans_are_cached_on_the_forward_op():
    w = flow.tensor(np.ones((3, 3), np.float32)).requires_grad_(True)
    x = flow.tensor(np.arange(9, dtype=np.float32).reshape(3, 3))
    for _ in range(3):
        w.grad = None
        flow.matmul(x, w).sum().backward()
    forward = global_eager.compiled_op("matmul", {"transpose_a": False, "transpose_b": False, "alpha": 1.0},
                                       [x._value, w._value])
    assert len(forward.grads) == 1  # one backward plan, compiled once for the three backward passes
    np.testing.assert_allclose(w.grad.numpy(), np.repeat(x.numpy().sum(axis=0)[:, None], 3, axis=1))


def test_values_carry_their_layout_id():
    x = flow.ones(2, 3)
    y = flow.ones(2, 3)
    z = flow.ones(3, 2)
    assert x._value.lk == y._value.lk != z._value.lk
    assert (x + y)._value.lk == x._value.lk


# --- gradient buckets on one process ---------------------------------------------------------------------------------
def test_buckets_pack_by_dtype_and_capacity_in_the_given_order():
    b = buckets.GradBuckets([(3, 4), (5,), (2, 2), (7,)], [np.float32, np.float32, np.float64, np.float64], [0],
                            cap_bytes=60)
    # 48 bytes, then 20 more would pass 60: a new bucket; a new dtype: a new bucket; 32 + 56 > 60: a new one
    assert b.slots == [(0, 0, 12), (1, 0, 5), (2, 0, 4), (3, 0, 7)]
    assert [buf.dtype for buf in b.buffers] == [np.float32, np.float32, np.float64, np.float64]
    big = buckets.GradBuckets([(3, 4), (5,)], [np.float32, np.float32], [0])
    assert big.slots == [(0, 0, 12), (0, 12, 17)] and len(big.buffers) == 1


def test_buckets_reuse_their_buffers_and_return_views_of_them():
    b = buckets.GradBuckets([(2, 2), (3,)], [np.float32, np.float32], [0])
    first = b.all_reduce([np.ones((2, 2), np.float32), np.arange(3, dtype=np.float32)], scale=0.5)
    np.testing.assert_array_equal(first[0], np.full((2, 2), 0.5))
    np.testing.assert_array_equal(first[1], [0, 0.5, 1])
    second = b.all_reduce([None, np.ones(3, np.float32)])
    assert second[0].base is first[0].base is b.buffers[0]  # the same persistent buffer
    np.testing.assert_array_equal(second[0], np.zeros((2, 2)))  # None: a zero gradient
    with pytest.raises(ValueError, match=r"a gradient of shape \(2,\) for the entry of shape \(3,\)"):
        b.all_reduce([np.ones((2, 2), np.float32), np.ones(2, np.float32)])


def test_buckets_of_gradients_that_live_in_them_reduce_in_order_as_they_complete():
    b = buckets.GradBuckets([(2,), (3,), (4,)], [np.float32] * 3, [0], per_bucket=2)
    assert b.members == [[0, 1], [2]]
    b.view(2)[...] = 1
    assert b.ready(2) == []  # bucket 1 waits for bucket 0: every rank reduces them in one order
    b.view(0)[...] = 2
    assert b.ready(0) == []
    assert b.ready(1) == [0, 1]
    np.testing.assert_array_equal(b.view(2), np.ones(4))
    b.reset()
    assert b.ready(0) == [] and b.next_bucket == 0


def test_eager_gradients_on_cpu_devices_have_no_small_first_bucket():
    # the ranks sum a CPU bucket themselves at the end of backward: an early small bucket would only add a meeting
    # of the ranks (a GPU's first bucket is summed by NCCL while backward goes on: PyTorch's 1 MB)
    from oneflow_compat.ir.placement import Placement

    assert buckets.first_cap_bytes(Placement("cpu", [(0, 0), (1, 0)])) is None
    assert buckets.first_cap_bytes(Placement("gpu", [(0, 0), (1, 0)])) == buckets.FIRST_CAP_BYTES == 1 << 20
    b = buckets.GradBuckets([(10,), (10, 512), (512,), (512, 512)], [np.float32] * 4, [0],
                            first_cap_bytes=buckets.first_cap_bytes(Placement("cpu", [(0, 0)])))
    assert len(b.plan) == 1


def test_check_meta_and_oneflows_balanced_override_decide_whether_a_feed_exchanges_shapes(monkeypatch):
    # OneFlow v0.9.0 NeedSyncAndCheckShapeAndDtype (global_cast.cpp): the env override, when set, wins
    env = global_eager.BALANCED_OVERRIDE_ENV
    assert env == "ONEFLOW_EAGER_LOCAL_TO_GLOBAL_BALANCED_OVERRIDE"
    monkeypatch.delenv(env, raising=False)
    assert global_eager.sync_meta(True) is True and global_eager.sync_meta(False) is False
    monkeypatch.setenv(env, "true")
    assert global_eager.sync_meta(True) is False
    monkeypatch.setenv(env, "0")
    assert global_eager.sync_meta(False) is True
    monkeypatch.setenv(env, "maybe")
    with pytest.raises(ValueError, match="ONEFLOW_EAGER_LOCAL_TO_GLOBAL_BALANCED_OVERRIDE='maybe'"):
        global_eager.sync_meta(True)
    # on one process a feed with check_meta=False is the local tensor made global
    monkeypatch.delenv(env)
    t = flow.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    g = t.to_global(placement=flow.placement("cpu", [0]), sbp=flow.sbp.split(0), check_meta=False)
    assert tuple(g.shape) == (3, 2)
    np.testing.assert_array_equal(g.numpy(), t.numpy())
