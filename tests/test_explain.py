"""`oneflow_compat.explain`: per-op placement/SBP/section and every boxing transition with its bytes per call, for
data-parallel and model-parallel MLPs; and the `python -m oneflow_compat [explain]` command line."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cpu_reference import child_device

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.tools import explain as explain_mod
from oneflow_compat.ir import sbp as S
from oneflow_compat.framework import session as sess

F32 = 4
IN, HID = 7, 6


def _mlp(devices, batch, units, model_parallel, optimizer=flow.optimizer.SGD):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((batch, IN)),
                  y: tp.Numpy.Placeholder((batch,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.dense(x, HID, activation=flow.nn.relu, name="d1")
        dist = flow.distribute.split(0) if model_parallel else flow.distribute.auto()
        logits = flow.layers.dense(h, units, name="d2", model_distribute=dist)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        optimizer(flow.optimizer.PiecewiseConstantScheduler([], [0.1])).minimize(loss)
        return loss

    return train_job


VARIABLE_SIZES = {"d1-weight": HID * IN, "d1-bias": HID}


# What the busiest of p devices sends (comm/process_comm.py's rule), written out: balanced parts, uneven included.
def _parts(n, p):
    return [n // p + (1 if i < n % p else 0) for i in range(p)]


def all_reduce_bytes(n, p, itemsize=F32):  # reduce-scatter then all-gather of the flat array's balanced chunks
    return max(n - c + (p - 1) * c for c in _parts(n, p)) * itemsize


def all_gather_bytes(rows, row, p, itemsize=F32):  # its rows to each other device
    return max((p - 1) * r for r in _parts(rows, p)) * row * itemsize


def reduce_scatter_bytes(rows, row, p, itemsize=F32):  # the other devices' rows of its addend
    return max(rows - r for r in _parts(rows, p)) * row * itemsize


def all_to_all_bytes(held, wanted, p, itemsize=F32):  # (its part of the held axis) x (others' parts of the wanted)
    return max(h * (wanted - w) for h, w in zip(_parts(held, p), _parts(wanted, p))) * itemsize


@pytest.mark.parametrize("p", [2, 3, 4])
def test_data_parallel_one_all_reduce_per_variable(p):
    units = 5
    # Adam: an SGD update would be fused with its gradient's producer, the partial sums added into the variable
    # shared by the in-process devices, with no all-reduce (test_data_parallel_sgd_needs_no_boxing)
    job = _mlp(p, 12, units, model_parallel=False, optimizer=flow.optimizer.Adam)
    report = flow.explain(job)  # the package-level call works on the decorated function
    sizes = dict(VARIABLE_SIZES, **{"d2-weight": units * HID, "d2-bias": units})
    # forward and backward move nothing: inputs split on the batch, variables broadcast, gradients partial sums
    assert report.total_bytes("forward") == 0 and report.total_bytes("backward") == 0
    assert len(report.boxing) == len(sizes)
    by_var = {}
    for b in report.boxing:
        assert (b.src_sbp, b.dst_sbp, b.collective, b.section) == (S.P, S.B, "all-reduce", "optimizer")
        assert b.src_placement.parallel_num == p and b.dst_placement == b.src_placement
        var = b.consumer.rsplit("-update", 1)[0]
        assert report.op(b.consumer).type == "optimizer_update"
        by_var[var] = b
    assert sorted(by_var) == sorted(sizes)
    for var, n in sizes.items():
        assert by_var[var].shape == _var_shape(var, units)
        assert by_var[var].bytes == all_reduce_bytes(n, p)
        if n % p == 0:  # the textbook figure where the chunks are even
            assert by_var[var].bytes == pytest.approx(2.0 * n * F32 * (p - 1) / p, rel=1e-12)
    assert report.total_bytes() == sum(all_reduce_bytes(n, p) for n in sizes.values())
    assert report.by_collective() == {"all-reduce": (4, pytest.approx(report.total_bytes()))}
    # ops: names, placements, SBPs and sections as compiled
    d1 = report.op("d1-activation")  # matmul, bias_add and relu fused (passes/fusion.py)
    assert (d1.type, d1.sbp_in, d1.sbp_out, d1.section) == ("matmul_bias_act", [S.S(0), S.B, S.B], [S.S(0)],
                                                            "forward")
    assert report.op("d1-weight").sbp_out == [S.B]
    assert {o.section for o in report.ops} == {"forward", "backward", "optimizer"}
    # explaining compiled the session; the job still runs, and on p devices gives the 1-device loss
    x = np.random.default_rng(0).standard_normal((12, IN)).astype(np.float32)
    y = np.arange(12, dtype=np.int32) % units
    assert sess.default_session().is_running
    assert job(x, y).shape == (12,)


def _var_shape(var, units):
    return {"d1-weight": (HID, IN), "d1-bias": (HID,), "d2-weight": (units, HID), "d2-bias": (units,)}[var]


@pytest.mark.cpu_only("the fused updates add partial gradients into one shared array, which only CPU devices of one process have")
@pytest.mark.parametrize("p", [2, 3, 4])
def test_model_parallel_dense_gathers_its_input(p):
    batch, units = 4, 10  # batch < units: gathering the input is cheaper than gathering the weight
    report = flow.explain(_mlp(p, batch, units, model_parallel=True))
    assert report.op("d2-weight").sbp_out == [S.S(0)] and report.op("d2-bias").sbp_out == [S.S(0)]
    # matmul and bias_add fused (passes/fusion.py), in the layout inference gave them
    d2 = report.op("d2-bias_add")
    assert (d2.type, d2.sbp_in, d2.sbp_out) == ("matmul_bias_act", [S.B, S.S(0), S.S(0)], [S.S(1)])

    def what(b):  # forward: the blob moved; backward: its consumer's type; optimizer: the variable updated
        if b.section == "forward":
            return b.blob
        if b.section == "backward":
            return report.op(b.consumer).type
        return b.consumer.rsplit("-update", 1)[0]

    got = [(what(b), b.src_sbp, b.dst_sbp, b.collective, b.section, b.bytes) for b in report.boxing]
    expected = [
        # the model-parallel layer's input
        ("d1-activation/out", S.S(0), S.B, "all-gather", "forward", all_gather_bytes(batch, HID, p)),
        # class split -> batch split, and d logits back to class split (d h)
        ("d2-bias_add/out", S.S(1), S.S(0), "all-to-all", "forward", all_to_all_bytes(units, batch, p)),
        ("matmul", S.S(0), S.S(1), "all-to-all", "backward", all_to_all_bytes(batch, units, p)),
        # d h is partial over the classes
        ("relu_grad", S.P, S.S(0), "reduce-scatter", "backward", reduce_scatter_bytes(batch, HID, p)),
        # d1's partial gradients are added into its shared variables by the fused updates: no all-reduce
        ("d2-weight", S.P, S.S(0), "reduce-scatter", "optimizer", reduce_scatter_bytes(units, HID, p)),
        ("d2-bias", S.P, S.S(0), "reduce-scatter", "optimizer", reduce_scatter_bytes(units, 1, p)),
    ]
    assert [g[:5] for g in got] == [e[:5] for e in expected]
    for g, e in zip(got, expected):
        assert g[5] == e[5], g
    assert [b.consumer for b in report.boxing][:2] == ["d2-bias_add", "sparse_softmax_cross_entropy_0"]
    assert report.total_bytes("forward") == expected[0][5] + expected[1][5]
    assert report.total_bytes() == pytest.approx(sum(e[5] for e in expected))
    text = str(report)
    assert "all-gather" in text and "d2-bias_add" in text and "reduce-scatter" in text
    assert ("total: %s bytes per call" % explain_mod._fmt_bytes(report.total_bytes())) in text


def test_model_parallel_dense_keeps_weight_split_for_large_batches():
    report = flow.explain(_mlp(2, 16, 4, model_parallel=True))
    assert report.op("d2-bias_add").sbp_in == [S.B, S.S(0), S.S(0)]
    assert [b.blob for b in report.boxing if b.section == "forward"][0] == "d1-activation/out"


def test_explain_rejects_plain_functions():
    with pytest.raises(TypeError, match="global_function"):
        flow.explain(lambda: None)


def test_report_text_lists_every_op():
    job = _mlp(2, 4, 3, model_parallel=False, optimizer=flow.optimizer.Adam)
    report = explain_mod.explain(job)
    text = str(report)
    assert text.startswith("job 'train_job' (train): %d ops, 4 boxing" % len(report.ops))
    for o in report.ops:
        assert o.name in text
    assert "total: %s bytes per call (forward 0, backward 0, optimizer %s)" % (
        explain_mod._fmt_bytes(report.total_bytes()), explain_mod._fmt_bytes(report.total_bytes())) in text


# --- command line ----------------------------------------------------------------------------------------------
SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import oneflow as flow
    import oneflow.typing as tp
    assert flow.__name__ == "oneflow_compat"
    flow.config.cpu_device_num(int(sys.argv[1]))

    @flow.global_function()
    def predict(x: tp.Numpy.Placeholder((6, 4))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(4, 3), initializer=flow.ones_initializer())
        return flow.matmul(x, w)

    print("before the call")
    print("result", predict(np.ones((6, 4), np.float32)).sum())
""")


def _run(args, tmp_path):
    script = tmp_path / "legacy_script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-m", "oneflow_compat"] + [a.replace("SCRIPT", str(script))
                                                                      for a in args],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)


def test_cli_runs_a_legacy_script(tmp_path):
    r = _run(["SCRIPT", "2"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "before the call" in r.stdout and "result 72.0" in r.stdout


def test_cli_explain_compiles_instead_of_running(tmp_path):
    r = _run(["explain", "SCRIPT", "2"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "before the call" in r.stdout and "result" not in r.stdout
    assert "job 'predict' (predict)" in r.stdout
    assert "matmul" in r.stdout and "%s 0:0-1" % child_device() in r.stdout and "[S(0), B]" in r.stdout
    assert "total: 0 bytes per call" in r.stdout


def test_cli_explain_refuses_eager_scripts(tmp_path):
    script = tmp_path / "eager_script.py"
    script.write_text(SCRIPT.replace("flow.config.cpu_device_num", "flow.enable_eager_execution(True)\n"
                                     "flow.config.cpu_device_num"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-m", "oneflow_compat", "explain", str(script), "1"], capture_output=True,
                       text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert r.returncode == 1, r.stderr
    assert "eager mode" in r.stdout and "result" not in r.stdout


def test_cli_usage_and_errors(tmp_path):
    r = _run([], tmp_path)
    assert r.returncode == 2 and "a subcommand or a script is required" in r.stderr
    r = _run(["explain", "no_such_script.py"], tmp_path)
    assert r.returncode == 2 and "no such script" in r.stderr
