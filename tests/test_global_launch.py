"""`python -m oneflow.distributed.launch`: OneFlow's options and environment, processes on MPI.

* one node × 2 and two launchers × 2 on this host (one MPI communicator joined with Open_port/Accept/Connect):
  the variables each process sees, `flow.env.get_*`, an all-reduce and a global tensor over the whole job;
* `-m module`, `--no_python`, `--logdir` / `--redirect_stdout_and_stderr`;
* a failing rank ends every rank (both nodes) within seconds, its message shown; SIGTERM or SIGINT to a launcher
  leaves no process behind;
* the launch variables all set or all unset; plain `mpiexec` and processes started by hand under `mpiexec -n 1`.
"""
import json
import re
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from oneflow_compat.comm import mpiexec_command
from oneflow_compat.comm.environment import is_job_variable

pytest.importorskip("mpi4py")

ROOT = Path(__file__).resolve().parent.parent
MPIEXEC = Path(sys.executable).parent / "mpiexec"
_MPI_PREFIXES = ("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "ONEFLOW_COMPAT_")
_LAUNCH_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "OMP_NUM_THREADS",
                     "GLOG_log_dir")

pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)

# Prints one JSON line per process: what it sees, and the results of collectives over the whole job.
PROBE = textwrap.dedent("""\
    import json, os, sys
    import numpy as np
    import oneflow as flow
    from oneflow_compat.comm import get_process_comm

    comm = get_process_comm()
    everyone = tuple(range(comm.size))
    x = np.array([float(comm.rank + 1)])
    comm.allreduce_(x, everyone)
    P = flow.placement("cpu", ranks=list(everyone))
    t = flow.tensor([[float(flow.env.get_rank()), 1.0]]).to_global(placement=P, sbp=flow.sbp.split(0))
    # a gradient bucket's buffer over the whole job (in memory shared only within one MPI world), and a large
    # all-gather twice over this node's pair (shared memory, its results in the members' arenas the second time)
    shared = comm.shared_buffer((3,), np.float64, everyone)
    shared[...] = comm.rank + 1
    comm.allreduce_(shared, everyone)
    pair = tuple(r for r in everyone if r // 2 == comm.rank // 2)
    for _ in range(2):
        gathered = comm.allgatherv(np.full((300, 300), float(comm.rank)), pair, sizes=[300] * len(pair))
    print("PROBE " + json.dumps({
        "env": {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                                               "OMP_NUM_THREADS")},
        "flow": [flow.env.get_rank(), flow.env.get_world_size(), flow.env.get_local_rank(),
                 flow.env.get_node_size()],
        "comm": [comm.rank, comm.size], "args": sys.argv[1:], "allreduce": float(x[0]),
        "ranks_in_order": comm.allgather_object(flow.env.get_rank()),
        "global_sum": float((t * 2).sum().numpy()), "global_shape": list(t.shape),
        "shared_allreduce": shared.tolist(), "pair_gather": float(gathered.sum()) / 90000}))
""")

# Rank `argv[1]` raises once every process is up; the others wait in a collective.
FAILING = textwrap.dedent("""\
    import sys, time
    import numpy as np
    import oneflow as flow
    from oneflow_compat.comm import get_process_comm

    comm = get_process_comm()
    comm.barrier()
    if flow.env.get_rank() == int(sys.argv[1]):
        time.sleep(0.3)
        raise RuntimeError("boom on rank %d" % flow.env.get_rank())
    comm.barrier()
""")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not is_job_variable(k, _MPI_PREFIXES) and k not in _LAUNCH_VARIABLES}
    env.update(OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", ONEFLOW_COMPAT_COMM_TIMEOUT="60")
    env.update(extra)
    return env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launcher(*args):
    return [sys.executable, "-m", "oneflow.distributed.launch"] + [str(a) for a in args]


def start(command, cwd, **env):
    process = subprocess.Popen(command, cwd=cwd, env=mpiexec_command.environment(MPIEXEC, _env(**env)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    process.started = time.perf_counter()
    return process


def finish(process, timeout=60):
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError("did not end within %d s:\n%s\n%s" % (timeout, out, err))
    process.out, process.err = out, err
    process.elapsed = time.perf_counter() - process.started
    return process


def probes(text):
    found = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("PROBE ")]
    return sorted(found, key=lambda p: p["flow"][0])


def write(folder, name, text):
    path = Path(folder) / name
    path.write_text(text)
    return path


# ----- one node, two launchers -------------------------------------------------------------------------------

def test_one_node_two_processes(tmp_path):
    write(tmp_path, "probe.py", PROBE)
    port = free_port()
    done = finish(start(launcher("--nproc_per_node", 2, "--master_port", port, "probe.py", "a", "--b"), tmp_path))
    assert done.returncode == 0, done.out + done.err
    found = probes(done.out)  # both ranks' lines appear, unprefixed
    assert len(found) == 2, done.out
    for rank, probe in enumerate(found):
        assert probe["env"] == {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
                                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1"}
        assert probe["flow"] == [rank, 2, rank, 1]
        assert probe["comm"] == [rank, 2]
        assert probe["args"] == ["a", "--b"]
        assert probe["allreduce"] == 3.0
        assert probe["global_sum"] == 2 * (0 + 1 + 2)  # rows [r, 1] of ranks 0 and 1, times 2
        assert probe["global_shape"] == [2, 2]
        assert probe["shared_allreduce"] == [3.0] * 3 and probe["pair_gather"] == 0 + 1


def test_two_launchers_two_processes_each(tmp_path):
    write(tmp_path, "probe.py", PROBE)
    port = free_port()
    common = ("--nnodes", 2, "--nproc_per_node", 2, "--master_addr", "127.0.0.1", "--master_port", port)
    node1 = start(launcher(*common, "--node_rank", 1, "probe.py", "x"), tmp_path)
    node0 = start(launcher(*common, "--node_rank", 0, "probe.py", "x"), tmp_path)
    node0, node1 = finish(node0), finish(node1)
    assert node0.returncode == 0, node0.out + node0.err
    assert node1.returncode == 0, node1.out + node1.err
    assert [p["flow"][0] for p in probes(node0.out)] == [0, 1]
    assert [p["flow"][0] for p in probes(node1.out)] == [2, 3]
    for rank, probe in enumerate(probes(node0.out) + probes(node1.out)):
        assert probe["env"] == {"RANK": str(rank), "LOCAL_RANK": str(rank % 2), "WORLD_SIZE": "4",
                                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1"}
        assert probe["flow"] == [rank, 4, rank % 2, 2]
        assert probe["comm"] == [rank, 4]                  # the joined communicator's rank is RANK
        assert probe["ranks_in_order"] == [0, 1, 2, 3]
        assert probe["allreduce"] == 1.0 + 2 + 3 + 4      # over both nodes' processes
        assert probe["global_sum"] == 2 * (0 + 1 + 2 + 3 + 4)
        assert probe["global_shape"] == [4, 2]
        # the shared buffer spans two MPI worlds of one host: summed through MPI (it crashed in
        # MPI_Win_allocate_shared before); each node's pair shares memory
        assert probe["shared_allreduce"] == [10.0] * 3
        assert probe["pair_gather"] == (0 + 1 if rank < 2 else 2 + 3)


def test_module_no_python_and_log_folders(tmp_path):
    # one write per line: under PYTHONUNBUFFERED print() writes each argument apart, and the two ranks' pieces
    # could interleave in the shared output
    write(tmp_path, "probe_module.py",
          "import os, sys\nsys.stdout.write('MODULE %s %s %s\\n' % (os.environ['RANK'], __name__, sys.argv[1:]))\n")
    port = free_port()
    done = finish(start(launcher("--nproc_per_node", 2, "--master_port", port, "-m", "probe_module", "q"), tmp_path))
    assert done.returncode == 0, done.err
    assert sorted(done.out.splitlines()) == ["MODULE 0 __main__ ['q']", "MODULE 1 __main__ ['q']"]

    program = write(tmp_path, "program.sh", '#!/bin/sh\necho "NP $RANK $LOCAL_RANK $WORLD_SIZE $GLOG_log_dir $*"\n'
                                            'echo "ERR $RANK" >&2\n')
    program.chmod(0o755)
    done = finish(start(launcher("--nproc_per_node", 2, "--master_port", port, "--no_python", "--logdir", "logs",
                                 "./program.sh", "z"), tmp_path))
    assert done.returncode == 0, done.err
    logs = tmp_path / "logs"
    assert sorted(done.out.splitlines()) == ["NP 0 0 2 %s z" % (logs / "local_rank_0"),
                                             "NP 1 1 2 %s z" % (logs / "local_rank_1")]
    assert sorted(p.name for p in logs.iterdir()) == ["local_rank_0", "local_rank_1"]

    done = finish(start(launcher("--nproc_per_node", 2, "--master_port", port, "--no_python", "--logdir", "logs",
                                 "--redirect_stdout_and_stderr", "./program.sh"), tmp_path))
    assert done.returncode == 0, done.err
    assert "NP" not in done.out and "ERR" not in done.err
    for i in range(2):
        folder = logs / ("local_rank_%d" % i)
        assert (folder / "stdout").read_text() == "NP %d %d 2 %s \n" % (i, i, folder)
        assert (folder / "stderr").read_text() == "ERR %d\n" % i


# ----- failures and signals ----------------------------------------------------------------------------------

def test_a_failing_rank_ends_the_job_within_seconds(tmp_path):
    write(tmp_path, "failing.py", FAILING)
    done = finish(start(launcher("--nproc_per_node", 2, "--master_port", free_port(), "failing.py", 1), tmp_path))
    assert done.returncode != 0
    assert done.elapsed < 15, done.elapsed
    assert "[rank 1] RuntimeError: boom on rank 1" in done.err, done.err


def test_a_failing_rank_on_one_node_ends_every_node(tmp_path):
    write(tmp_path, "failing.py", FAILING)
    common = ("--nnodes", 2, "--nproc_per_node", 2, "--master_port", free_port())
    node1 = start(launcher(*common, "--node_rank", 1, "failing.py", 3), tmp_path)
    node0 = start(launcher(*common, "--node_rank", 0, "failing.py", 3), tmp_path)
    node0, node1 = finish(node0), finish(node1)
    assert node0.returncode != 0 and node1.returncode != 0
    assert max(node0.elapsed, node1.elapsed) < 20, (node0.elapsed, node1.elapsed)
    assert "[rank 3] RuntimeError: boom on rank 3" in node1.err, node1.err


def test_a_global_op_only_one_node_reaches_fails_the_job(tmp_path):
    # rank 1 (node 1) runs a global op that rank 0 (node 0) never reaches: the comm timeout names the op, rank 1
    # aborts, and both launchers exit non-zero (node 0's own process had ended normally)
    write(tmp_path, "diverge.py", textwrap.dedent("""\
        import oneflow as flow
        P = flow.placement("cpu", [0, 1])
        x = flow.randn(4, 5, placement=P, sbp=flow.sbp.split(0))
        if flow.env.get_rank() == 1:
            x.to_global(sbp=flow.sbp.broadcast)
        print("rank %d reached the end" % flow.env.get_rank())
    """))
    common = ("--nnodes", 2, "--nproc_per_node", 1, "--master_port", free_port())
    node1 = start(launcher(*common, "--node_rank", 1, "diverge.py"), tmp_path, ONEFLOW_COMPAT_COMM_TIMEOUT="3")
    node0 = start(launcher(*common, "--node_rank", 0, "diverge.py"), tmp_path, ONEFLOW_COMPAT_COMM_TIMEOUT="3")
    node0, node1 = finish(node0), finish(node1)
    assert "rank 0 reached the end" in node0.out.splitlines() and "reached" not in node1.out
    assert node1.returncode != 0 and node0.returncode == 1
    assert max(node0.elapsed, node1.elapsed) < 25, (node0.elapsed, node1.elapsed)
    # the collective carrying the ranks' identity check (through shared memory: the to_global's all-gather)
    assert re.search(r"rank 1: allgatherv #\d+ over ranks \(0, 1\) in eager op 'to_global'", node1.err), node1.err
    assert "the processes of node 1 ended with exit code" in node0.err, node0.err


# the launcher started with the signal blocked by its parent (a signal mask survives exec): it must still stop
BLOCKED = ("import os, signal, sys\nsignal.pthread_sigmask(signal.SIG_BLOCK, {int(sys.argv[1])})\n"
           "os.execv(sys.executable, [sys.executable] + sys.argv[2:])\n")


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to find the job's processes")
@pytest.mark.parametrize("signum, blocked", [(signal.SIGTERM, False), (signal.SIGINT, False), (signal.SIGINT, True)],
                         ids=["SIGTERM", "SIGINT", "SIGINT-inherited-blocked"])
def test_a_signal_to_the_launcher_ends_every_process(signum, blocked, tmp_path):
    from process_tree import descendants, wait_until_gone

    script = write(tmp_path, "sleeper.py", "import time\nimport oneflow as flow\nprint('ready', flush=True)\n"
                                           "time.sleep(120)\n")
    command = launcher("--nproc_per_node", 2, "--master_port", free_port(), script)
    if blocked:
        command = [sys.executable, "-c", BLOCKED, str(int(signum))] + command[1:]
    process = start(command, tmp_path)
    ready = 0
    while ready < 2:
        line = process.stdout.readline()
        assert line, process.communicate(timeout=30)
        ready += line.startswith("ready")
    job = descendants(process.pid)
    assert len(job) >= 5, job  # the launcher, mpiexec, hydra's proxy, two ranks
    process.send_signal(signum)
    stopped = time.perf_counter()
    finish(process, timeout=30)
    assert process.returncode == 128 + signum
    assert time.perf_counter() - stopped < 10
    assert wait_until_gone(job) == []  # no orphan mpiexec, proxy or rank


# ----- the environment ---------------------------------------------------------------------------------------

def run_python(code, cwd, **env):
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=_env(**env), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)


def test_launch_variables_all_set_or_all_unset(tmp_path):
    show = "import oneflow as flow\nprint(flow.env.get_rank(), flow.env.get_world_size(), flow.env.get_local_rank()," \
           " flow.env.get_node_size())\n"
    assert run_python(show, tmp_path).stdout.split() == ["0", "1", "0", "1"]
    done = run_python(show, tmp_path, MASTER_ADDR="127.0.0.1", MASTER_PORT="29500", WORLD_SIZE="1", RANK="0",
                      LOCAL_RANK="0")
    assert done.stdout.split() == ["0", "1", "0", "1"], done.stderr
    done = run_python(show, tmp_path, RANK="1", WORLD_SIZE="2")
    assert done.returncode != 0
    assert ("MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK and LOCAL_RANK must be all set or all unset (as OneFlow "
            "requires); set: WORLD_SIZE, RANK; unset: MASTER_ADDR, MASTER_PORT, LOCAL_RANK") in done.stderr
    done = run_python(show, tmp_path, MASTER_ADDR="127.0.0.1", MASTER_PORT="29500", WORLD_SIZE="2", RANK="2",
                      LOCAL_RANK="0")
    assert "environment variable RANK=2 is out of range (0 <= RANK < 2)" in done.stderr
    # a process started by hand whose RANK 0 never comes says so within the comm timeout, not a hang
    # (processes started by hand join into one world: tests/test_hand_started.py)
    done = run_python(show, tmp_path, MASTER_ADDR="127.0.0.1", MASTER_PORT="29500", WORLD_SIZE="2", RANK="1",
                      LOCAL_RANK="1", ONEFLOW_COMPAT_COMM_TIMEOUT="2")
    assert done.returncode != 0
    assert "the process of RANK 0 did not open MASTER_ADDR:MASTER_PORT = 127.0.0.1:29500 within 2 s" in done.stderr


def test_plain_mpiexec_and_processes_started_by_hand(tmp_path):
    write(tmp_path, "probe.py", PROBE)
    done = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable, "-m", "mpi4py", "probe.py"], cwd=tmp_path,
                          env=mpiexec_command.environment(MPIEXEC, _env(ONEFLOW_COMPAT_OUTPUT="raw")), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = probes(done.stdout)
    assert [p["flow"] for p in found] == [[0, 2, 0, 1], [1, 2, 1, 1]]  # from MPI: no launch variables set
    assert all(p["env"]["RANK"] is None and p["allreduce"] == 3.0 for p in found)

    # the cookie's other way: each process started on its own with the five variables (here under mpiexec -n 1)
    port = free_port()
    hand = dict(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2", ONEFLOW_COMPAT_OUTPUT="raw")
    one = start([str(MPIEXEC), "-n", "1", sys.executable, "probe.py"], tmp_path, RANK="1", LOCAL_RANK="1", **hand)
    zero = start([str(MPIEXEC), "-n", "1", sys.executable, "probe.py"], tmp_path, RANK="0", LOCAL_RANK="0", **hand)
    zero, one = finish(zero), finish(one)
    assert zero.returncode == 0 and one.returncode == 0, zero.err + one.err
    found = probes(zero.out) + probes(one.out)
    assert [p["comm"] for p in found] == [[0, 2], [1, 2]]
    assert all(p["allreduce"] == 3.0 and p["ranks_in_order"] == [0, 1] for p in found)


# ----- the launcher's own checks -----------------------------------------------------------------------------

def test_launcher_builds_one_mpiexec_segment_per_process():
    from oneflow_compat.distributed import launch

    options = launch.build_parser().parse_args(["--nnodes", "2", "--node_rank", "1", "--nproc_per_node", "2",
                                                "train.py", "--lr", "0.1"])
    command = launch.mpiexec_command(options, {}, mpiexec="mpiexec")
    python = [sys.executable, "-m", "mpi4py", "train.py", "--lr", "0.1"]
    assert command == (["mpiexec", "-n", "1", "-env", "RANK", "2", "-env", "LOCAL_RANK", "0"] + python + [":"]
                       + ["-n", "1", "-env", "RANK", "3", "-env", "LOCAL_RANK", "1"] + python)
    # a running job's variables are dropped; the MPI library's configuration is the machine's and stays (the GPU
    # machine's Open MPI needs its OMPI_MCA_plm=isolated, else its mpiexec looks for ssh: the launcher failed there)
    env = launch.job_environment(options, {"PATH": "/bin", "PMI_RANK": "3", "RANK": "9", "OMPI_COMM_WORLD_RANK": "1",
                                           "OMPI_MCA_plm": "isolated", "PMIX_MCA_gds": "hash", "PMIX_RANK": "1",
                                           "OMPI_ALLOW_RUN_AS_ROOT": "1"})
    assert env["WORLD_SIZE"] == "4" and env["MASTER_ADDR"] == "127.0.0.1" and env["MASTER_PORT"] == "29500"
    assert not {"PMI_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"} & set(env)
    assert env["OMPI_MCA_plm"] == "isolated" and env["PMIX_MCA_gds"] == "hash" and env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
    assert env["ONEFLOW_COMPAT_OUTPUT"] == "raw" and env["OMP_NUM_THREADS"] == "1"


def test_launcher_rejects_impossible_options(tmp_path):
    done = subprocess.run(launcher("--nnodes", 2, "--node_rank", 2, "x.py"), cwd=tmp_path, env=_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert done.returncode == 2
    assert "--node_rank must be in [0, 2) for --nnodes 2, got 2" in done.stderr
