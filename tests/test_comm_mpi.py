"""The MPI process comm on real ranks: scripts in tests/mpi_scripts run as
`<venv>/bin/mpiexec -n N python -m mpi4py tests/mpi_scripts/comm_xxx.py` under a timeout, N = 2 and 4."""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")
from oneflow_compat.comm import world  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "mpi_scripts"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
MPI_VARIABLE_PREFIXES = ("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "ONEFLOW_COMPAT_")

pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)


def environment(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(MPI_VARIABLE_PREFIXES)}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.update(extra)
    return env


class Finished:
    def __init__(self, returncode, stdout, stderr, elapsed):
        self.returncode, self.stdout, self.stderr, self.elapsed = returncode, stdout, stderr, elapsed


def start(command, **extra_env):
    process = subprocess.Popen(command, cwd=ROOT, env=environment(**extra_env), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    return process, time.perf_counter()


def finish(started, timeout=60):
    process, t0 = started
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return Finished(process.returncode, stdout, stderr, time.perf_counter() - t0)


def mpi_command(n, script, *args):
    return [str(MPIEXEC), "-n", str(n), sys.executable, "-m", "mpi4py", str(SCRIPTS / script)] + list(args)


def run(command, timeout=60, **extra_env):
    return finish(start(command, **extra_env), timeout)


def mpirun(n, script, *args, timeout=60, **extra_env):
    return run(mpi_command(n, script, *args), timeout=timeout, **extra_env)


@pytest.fixture(scope="module")
def timeout_runs():
    """The jobs that wait for a 3 s timeout, one after the other: run together (8 processes on a 2-core machine)
    a rank could miss the 1 s window in which waiting ranks answer, and be reported missing."""
    jobs = {"missing-2": mpi_command(2, "comm_timeout.py"), "missing-4": mpi_command(4, "comm_timeout.py"),
            "order-2": mpi_command(2, "comm_timeout_order.py")}
    return {name: finish(start(command), timeout=30) for name, command in jobs.items()}


@pytest.mark.parametrize("n", [2, 4])
def test_collectives_match_numpy(n):
    result = mpirun(n, "comm_collectives.py")
    assert result.returncode == 0, result.stdout + result.stderr
    # stdout appears once (rank 0's), and reports how many checks all ranks ran
    match = re.fullmatch(r"collectives OK: (\d+) checks over (\d+) ranks\n", result.stdout)
    assert match, result.stdout
    assert int(match.group(2)) == n and int(match.group(1)) > 50 * (n - 1)


@pytest.mark.parametrize("n", [2, 4])
def test_check_same_mismatch_raises_on_every_rank(n):
    result = mpirun(n, "comm_check_same.py", ONEFLOW_COMPAT_OUTPUT="all")
    assert result.returncode == 0, result.stdout + result.stderr
    if n == 2:
        want = "plan of job 'train_job' differs across ranks at op #2: rank 0 has 'dense1-bias_add', rank 1 has " \
               "'dense1-relu'"
    else:
        want = "plan of job 'train_job' differs across ranks at op #2: rank 0 has 'dense1-bias_add', ranks 1,3 " \
               "have 'dense1-relu', rank 2 has nothing (its list ends after 2 ops)"
    lines = sorted(result.stdout.splitlines())
    assert lines == ["[rank %d] rank %d caught: %s" % (r, r, want) for r in range(n)]


@pytest.mark.parametrize("n", [2, 4])
def test_exception_on_one_rank_ends_all_ranks(n):
    result = mpirun(n, "comm_raise.py", timeout=30)
    assert result.returncode != 0
    assert result.elapsed < 10
    last = n - 1
    assert "[rank %d] Traceback (most recent call last):" % last in result.stderr
    assert "[rank %d] ValueError: boom on purpose on the last rank" % last in result.stderr


def test_exception_in_a_thread_ends_all_ranks():
    result = mpirun(2, "comm_raise.py", "thread", timeout=30)
    assert result.returncode != 0
    assert result.elapsed < 10
    assert "[rank 1] uncaught exception in thread 'helper'; aborting all ranks" in result.stderr
    assert "[rank 1] ValueError: boom on purpose in a thread of the last rank" in result.stderr


@pytest.mark.parametrize("n", [2, 4])
def test_rank_missing_from_collective_times_out_naming_it(n, timeout_runs):
    result = timeout_runs["missing-%d" % n]
    assert result.returncode != 0
    assert result.elapsed < 10, result.elapsed  # 3 s timeout + 1 s asking around + start-up
    everyone = "(%s)" % ", ".join(map(str, range(n)))
    message = re.search(r"CollectiveTimeout: rank (\d+): allreduce #\d+ over ranks %s did not complete within "
                        r"3\.\d s\. Missing rank %d: no answer" % (re.escape(everyone), n - 1), result.stderr)
    assert message, result.stderr
    if n > 2:
        waiting = [r for r in range(n - 1) if r != int(message.group(1))]
        assert "Waiting in the same collective: ranks %s." % ", ".join(map(str, waiting)) in result.stderr


@pytest.mark.parametrize("n", [2, 4])
def test_killed_rank_ends_the_run(n):
    result = mpirun(n, "comm_sigkill.py", timeout=30)
    assert result.returncode != 0
    assert result.elapsed < 10


def test_stdout_once_and_prefixed_stderr():
    result = mpirun(4, "comm_output.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello from rank 0 of 4\nthreads 1 1 1\n"
    lines = result.stderr.splitlines()
    assert "note from rank 0" in lines
    for r in (1, 2, 3):
        assert "[rank %d] note from rank %d" % (r, r) in lines


def test_launcher_selftest_then_script():
    script = str(SCRIPTS / "comm_output.py")
    env = {k: v for k, v in environment().items() if not k.endswith("_NUM_THREADS")}
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "oneflow_compat.tools.launch", "-n", "2", "--selftest", script],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert time.perf_counter() - started < 20
    assert result.returncode == 0, result.stderr
    share = world.threads_per_rank(2)
    lines = result.stdout.splitlines()
    assert lines[0] == "oneflow_compat.tools.launch self-test: 2 ranks on 1 host"
    assert re.fullmatch(r"  host \S+: ranks 0, 1", lines[1])
    assert lines[2] == "  all-reduce sum over all ranks: correct"
    assert re.fullmatch(r"  all-reduce of 4 MB float32: [\d.]+ ms per call, [\d.]+ GB/s algorithm bandwidth, "
                        r"[\d.]+ GB/s bus bandwidth", lines[3])
    assert lines[4] == "  threads per rank: OMP_NUM_THREADS=%d, OPENBLAS_NUM_THREADS=%d, MKL_NUM_THREADS=%d" \
        % (share, share, share)
    # then the script itself, its stdout once
    assert lines[5:] == ["hello from rank 0 of 2", "threads %d %d %d" % (share, share, share)]


def test_launcher_returns_the_job_exit_code():
    result = run([sys.executable, "-m", "oneflow_compat.tools.launch", "-n", "2", "--output", "all",
                  str(SCRIPTS / "comm_raise.py")], timeout=30)
    assert result.returncode != 0
    assert "[rank 1] ValueError: boom on purpose on the last rank" in result.stderr


def test_timeout_says_which_operation_the_other_rank_is_in(timeout_runs):
    result = timeout_runs["order-2"]
    assert result.returncode != 0
    assert result.elapsed < 10, result.elapsed
    from_rank0 = ("rank 0: allreduce #2 over ranks (0, 1) did not complete within 3.0 s. Rank 1 is in a different "
                  "operation: recv from rank 0 #1 over ranks (0, 1)")
    from_rank1 = ("rank 1: recv from rank 0 #1 over ranks (0, 1) did not complete within 3.0 s. Rank 0 is in a "
                  "different operation: allreduce #2 over ranks (0, 1)")
    assert from_rank0 in result.stderr or from_rank1 in result.stderr, result.stderr
