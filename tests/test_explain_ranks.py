"""`explain` of a program run by several ranks: the report printed once (not once per rank), every rank's boxing in
it, and a gradient's boxing labelled as a gradient."""
import os
import subprocess
import sys
import textwrap

import pytest
from oneflow_compat.comm import mpiexec_command

from cpu_reference import child_device
from oneflow_compat.comm.environment import is_job_variable

VENV_BIN = os.path.dirname(sys.executable)
MPIEXEC = os.path.join(VENV_BIN, "mpiexec")

DATA_PARALLEL = textwrap.dedent("""
    import oneflow as flow
    import oneflow.nn as nn
    pl = flow.placement("cpu", [0, 1])
    flow.manual_seed(0)
    m = nn.Linear(4, 3)
    m.to_global(placement=pl, sbp=flow.sbp.broadcast)
    x = flow.randn(6, 4, placement=pl, sbp=flow.sbp.split(0))
    m(x).sum().backward()
    print("done")
""")


def _env():
    return {k: v for k, v in os.environ.items()
            if not is_job_variable(k, ("PMI_", "OMPI_", "MV2_", "PMIX_", "ONEFLOW_COMPAT_OUT"))
            and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")
def test_under_the_launcher_the_report_is_printed_once_with_gradients_labelled(tmp_path):
    (tmp_path / "prog.py").write_text(DATA_PARALLEL)
    done = subprocess.run(["timeout", "120", sys.executable, "-m", "oneflow.distributed.launch", "--nproc_per_node",
                           "2", "-m", "oneflow_compat", "explain", "prog.py"], cwd=str(tmp_path), env=_env(),
                          capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines.count("done") == 2  # the program's own output: every rank's, as OneFlow's launcher shows it
    assert sum(line.startswith("eager global ops:") for line in lines) == 1
    rows = [line.split() for line in lines if line.startswith("gradient ")]
    # nn.Linear's weight (3x4) and bias (3): partial sums of the two ranks, all-reduced to the parameters' broadcast
    # in one gradient bucket: one flat buffer of 15 floats, whose all-reduce sends 2 * 60 * (2 - 1) / 2 bytes per rank
    assert [r[:4] + r[-3:] for r in rows] == [["gradient", "bucket", "[3,", "3x4]", "all-reduce", "60", "1"]]
    assert [r[4:6] for r in rows] == [["15", "float32"]]
    assert not any(line.startswith("to_global") for line in lines)


LEGACY = textwrap.dedent("""
    import numpy as np
    import oneflow as flow
    import oneflow.typing as tp
    flow.config.cpu_device_num(2)

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((12, 10)), y: tp.Numpy.Placeholder((12,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            h = flow.layers.dense(x, 8, activation=flow.nn.relu, name="hidden")
        logits = flow.layers.dense(h, 6, name="out", model_distribute=flow.distribute.split(0))
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    print("before the call")
    train_job(np.ones((12, 10), np.float32), np.zeros(12, np.int32))
    print("trained")
""")


def _explain(args, cwd, prefix=()):
    return subprocess.run(list(prefix) + [sys.executable, "-m", "oneflow_compat", "explain"] + args, cwd=str(cwd),
                          env=mpiexec_command.environment(MPIEXEC, _env()), capture_output=True, text=True, timeout=150)


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")
def test_legacy_plan_for_n_ranks_in_one_process_is_the_plan_n_processes_compile(tmp_path):
    (tmp_path / "prog.py").write_text(LEGACY)
    simulated = _explain(["--ranks", "3", "prog.py"], tmp_path)
    assert simulated.returncode == 0, simulated.stderr
    real = _explain(["prog.py"], tmp_path, prefix=["timeout", "120", MPIEXEC, "-n", "3"])
    assert real.returncode == 0, real.stderr
    assert simulated.stdout == real.stdout  # the same report (rank 0 prints under mpiexec), the script's lines too
    lines = simulated.stdout.splitlines()
    assert lines[0] == "before the call" and "trained" not in lines
    assert "%s 0:0-1,1:0-1,2:0-1" % child_device() in simulated.stdout  # 3 machines of 2 devices each
    assert sum(line.startswith("job 'train_job' (train)") for line in lines) == 1


def test_legacy_ranks_change_the_plan_and_draw_it(tmp_path):
    pytest.importorskip("matplotlib")
    (tmp_path / "prog.py").write_text(LEGACY)
    one = _explain(["prog.py"], tmp_path)
    four = _explain(["--ranks", "4", "--svg", "plan.svg", "prog.py"], tmp_path)
    assert one.returncode == 0 and four.returncode == 0, one.stderr + four.stderr

    def total(out):
        return int(next(line for line in out.splitlines() if line.startswith("total: ")).split()[1])

    assert total(four.stdout) > total(one.stdout) > 0  # model-parallel pieces over 8 devices instead of 2
    assert four.stdout.splitlines()[-1] == "explain: the plan's picture is in plan.svg"
    svg = (tmp_path / "plan.svg").read_text()
    assert "stage 0: %s 0:0-1,1:0-1,2:0-1,3:0-1 (8 devices)" % child_device() in svg


def test_a_global_program_runs_on_n_simulated_ranks_and_is_reported_once(tmp_path):
    """Its 3 ranks run as threads of the one explain process, each with its own context and comm."""
    program = "print('banner')\n" + DATA_PARALLEL.replace('flow.placement("cpu", [0, 1])',
                                                          'flow.placement("cpu", [0, 1, 2])')
    (tmp_path / "prog.py").write_text(program)
    done = _explain(["--ranks", "3", "prog.py"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["banner", "done"]  # printed once: by rank 0 of the real run, not by the first attempt
    # the two parameters' gradients (the loss seed needs no all-reduce: fill_like reads a partial sum for its shape)
    # in one bucket: the all-reduce of 3x4 + 3 = 15 float32 elements over 3 ranks, chunks of 5: the busiest rank sends
    # 10 of its elements and its chunk twice, 80 bytes (ops/transitions.py)
    assert lines[2] == "eager global ops: 1 boxing transfer (1 call), 80 bytes in all"
    grads = [line.split()[:6] for line in lines if line.startswith("gradient ")]
    assert grads == [["gradient", "bucket", "[3,", "3x4]", "15", "float32"]]
    assert all("%s ranks [0, 1, 2] P" % child_device() in line for line in lines[4:])
    assert "running its 3 ranks in this process (simulated ranks, one thread each)" in done.stderr


GLOBAL_WITH_GRAPH = textwrap.dedent("""
    import oneflow as flow
    pl = flow.placement("cpu", [0, 1])
    x = flow.ones(8, 6, placement=pl, sbp=flow.sbp.split(0))
    z = x.to_global(sbp=flow.sbp.split(1)).to_global(sbp=flow.sbp.broadcast)
    print("sum", float(z.sum().numpy()), "rank", flow.env.get_rank(), "of", flow.env.get_world_size())


    class Double(flow.nn.Graph):
        def build(self, a):
            return (a * 2).to_global(sbp=flow.sbp.broadcast)


    print(Double()(x).shape)
""")


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")
def test_simulated_ranks_report_what_mpi_ranks_report(tmp_path):
    """Eager boxing (S(0) -> S(1) -> B) and an nn.Graph's plan: the report of 2 simulated ranks is, line for line,
    the report of 2 MPI processes (rank 0's output in both; each simulated rank counts its own graphs)."""
    (tmp_path / "prog.py").write_text(GLOBAL_WITH_GRAPH)
    simulated = _explain(["--ranks", "2", "prog.py"], tmp_path)
    assert simulated.returncode == 0, simulated.stdout + simulated.stderr
    real = _explain(["prog.py"], tmp_path, prefix=["timeout", "120", MPIEXEC, "-n", "2"])
    assert real.returncode == 0, real.stderr
    assert simulated.stdout == real.stdout
    lines = simulated.stdout.splitlines()
    assert lines[0] == "sum 48.0 rank 0 of 2"
    # 8x6 float32 over 2 ranks: the all-to-all sends each rank's 4x3 block to the other (48 bytes), the all-gather
    # each rank's 8x3 half (96 bytes)
    assert lines[2] == "eager global ops: 2 boxing transfers (2 calls), 144 bytes in all"
    assert [line.split()[-3:] for line in lines[4:6]] == [["all-to-all", "48", "1"], ["all-gather", "96", "1"]]
    assert any(line.startswith("nn.Graph 'Double_0' (predict") for line in lines)


def test_simulated_ranks_that_diverge_fail_naming_both_sides(tmp_path):
    """A program whose ranks run different global ops fails under explain --ranks as it would under MPI: an
    AgreementError naming what each side runs, at once (no hang)."""
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import oneflow as flow
        pl = flow.placement("cpu", [0, 1])
        x = flow.ones(4, 4, placement=pl, sbp=flow.sbp.split(0))
        sbp = flow.sbp.broadcast if flow.env.get_rank() == 0 else flow.sbp.split(1)
        x.to_global(sbp=sbp)
    """))
    done = subprocess.run([sys.executable, "-m", "oneflow_compat", "explain", "--ranks", "2", "prog.py"],
                          cwd=str(tmp_path), env=dict(_env(), ONEFLOW_COMPAT_COMM_TIMEOUT="20"), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "AgreementError: rank " in done.stderr
    assert "S(0) on {0} ranks [0, 1] -> B on {0} ranks [0, 1]".format(child_device()) in done.stderr  # rank 0's side
    assert "S(0) on {0} ranks [0, 1] -> S(1) on {0} ranks [0, 1]".format(child_device()) in done.stderr  # rank 1's
    assert "the ranks run different global operations" in done.stderr


def test_ranks_refused_inside_a_multi_rank_job_and_checked(monkeypatch, tmp_path, capsys):
    from oneflow_compat import __main__ as cli
    from oneflow_compat.comm import world

    (tmp_path / "prog.py").write_text("print('x')\n")
    with pytest.raises(SystemExit):
        cli.main(["explain", "--ranks", "0", str(tmp_path / "prog.py")])
    assert "expected a number of ranks >= 1, got '0'" in capsys.readouterr().err
    monkeypatch.setattr(world, "job_size", lambda: 2)
    assert cli.main(["explain", "--ranks", "4", str(tmp_path / "prog.py")]) == 2
    assert "this process is already one of 2 ranks" in capsys.readouterr().err
