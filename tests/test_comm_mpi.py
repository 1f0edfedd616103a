"""The MPI process comm on real ranks: scripts in tests/mpi_scripts run as
`<venv>/bin/mpiexec -n N python -m mpi4py tests/mpi_scripts/comm_xxx.py` under a timeout, N = 2 and 4."""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from oneflow_compat.comm import mpiexec_command

pytest.importorskip("mpi4py")
from oneflow_compat.comm import world  # noqa: E402
from oneflow_compat.comm.environment import is_job_variable

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "mpi_scripts"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
MPI_VARIABLE_PREFIXES = ("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "ONEFLOW_COMPAT_")

pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)


def environment(**extra):
    env = {k: v for k, v in os.environ.items() if not is_job_variable(k, MPI_VARIABLE_PREFIXES)}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.update(extra)
    return env


class Finished:
    def __init__(self, returncode, stdout, stderr, elapsed):
        self.returncode, self.stdout, self.stderr, self.elapsed = returncode, stdout, stderr, elapsed


def start(command, **extra_env):
    process = subprocess.Popen(command, cwd=ROOT, env=mpiexec_command.environment(MPIEXEC, environment(**extra_env)), stdout=subprocess.PIPE,
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
            "order-2": mpi_command(2, "comm_timeout_order.py"),
            "missing-shared-3": mpi_command(3, "comm_timeout.py", "shared")}
    return {name: finish(start(command), timeout=30) for name, command in jobs.items()}


@pytest.mark.parametrize("n, shm", [(2, "1"), (4, "1"), (3, "0")])
def test_collectives_match_numpy(n, shm):
    """Through shared memory (the ranks of one host, the default) and through MPI's own collectives (shm off: what
    ranks on several hosts use)."""
    result = mpirun(n, "comm_collectives.py", ONEFLOW_COMPAT_SHM=shm)
    assert result.returncode == 0, result.stdout + result.stderr
    # stdout appears once (rank 0's), and reports how many checks all ranks ran
    match = re.fullmatch(r"collectives OK: (\d+) checks over (\d+) ranks\n", result.stdout)
    assert match, result.stdout
    assert int(match.group(2)) == n and int(match.group(1)) > 50 * (n - 1)


@pytest.mark.parametrize("n", [2, 3])
def test_results_in_arenas_match_numpy(n):
    """All-gather, joined all-to-all, gather with sizes and bcast copy straight into (or read from) results in the
    members' arenas once the arenas exist; mixed sizes go through the slots on every member alike; a dropped result's
    block comes back (not while a view of it lives); a wrong piece fails on its receiver only, different gather
    sizes on every member, and the board goes on."""
    result = mpirun(n, "comm_arena.py")
    assert result.returncode == 0, result.stdout + result.stderr
    match = re.fullmatch(r"arena OK: (\d+) checks, (\d+) results in arenas over (\d+) ranks\n", result.stdout)
    assert match, result.stdout
    assert int(match.group(3)) == n and int(match.group(1)) >= 20 * n and int(match.group(2)) >= 7 * n


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


@pytest.mark.parametrize("n, kind", [(2, ""), (4, ""), (3, "shared-")])
def test_rank_missing_from_collective_times_out_naming_it(n, kind, timeout_runs):
    """Also for an all-reduce in shared memory (`shared-`), whose waiting makes no MPI call."""
    result = timeout_runs["missing-%s%d" % (kind, n)]
    assert result.returncode != 0
    assert result.elapsed < 10, result.elapsed  # 3 s timeout + 1 s asking around + start-up
    everyone = "(%s)" % ", ".join(map(str, range(n)))
    message = re.search(r"CollectiveTimeout: rank (\d+): allreduce #\d+ over ranks %s did not complete within "
                        r"3\.\d s\. Missing rank %d: no answer" % (re.escape(everyone), n - 1), result.stderr)
    assert message, result.stderr
    if n > 2:
        waiting = [r for r in range(n - 1) if r != int(message.group(1))]
        assert "Waiting in the same collective: rank%s %s." % ("s" if len(waiting) > 1 else "",
                                                               ", ".join(map(str, waiting))) in result.stderr


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


# ----- a rank that leaves, a rank killed by a signal, a launcher stopped by one --------------------------------------

def test_a_rank_that_leaves_is_named_at_once_by_the_rank_waiting_for_it():
    # the comm timeout stays at its default (60 s): the ends below come from rank 1's note, within seconds
    runs = {mode: start(mpi_command(2, "comm_leave.py", mode)) for mode in ("sysexit", "return", "late", "delivered")}
    done = {mode: finish(started, timeout=60) for mode, started in runs.items()}
    for mode in ("sysexit", "return", "late"):
        result = done[mode]
        assert result.returncode != 0 and "not reached" not in result.stdout, (mode, result.stderr)
        assert result.elapsed < 20, (mode, result.elapsed)
        assert re.search(r"CommError: rank 0: allreduce #2 over ranks \(0, 1\) cannot complete: rank 1 \(pid \d+ on "
                         r"\S+\) left the program without taking part in it \(it ended, or called sys.exit / raised "
                         r"SystemExit; its exit status is unknown here\)", result.stderr), (mode, result.stderr)
    # what rank 1 sent before it left still arrives: no false alarm
    assert done["delivered"].returncode == 0, done["delivered"].stderr
    assert done["delivered"].stdout == "delivered OK\n"


def test_a_rank_that_left_is_named_by_an_exchange_waiting_for_it():
    """The boxing's point-to-point batches (`exchange`) know which peer each message comes from: a peer that left
    before sending is named at once; one that sent before leaving is not reported."""
    runs = {mode: start(mpi_command(2, "comm_leave.py", mode)) for mode in ("exchange-late", "exchange-delivered")}
    done = {mode: finish(started, timeout=60) for mode, started in runs.items()}
    late = done["exchange-late"]
    assert late.returncode != 0 and "not reached" not in late.stdout, late.stderr
    assert late.elapsed < 20, late.elapsed
    assert re.search(r"CommError: rank 0: exchange with ranks \(1\) #\d+ over ranks \(0, 1\) cannot complete: rank 1 "
                     r"\(pid \d+ on \S+\) left the program without taking part in it", late.stderr), late.stderr
    assert done["exchange-delivered"].returncode == 0, done["exchange-delivered"].stderr
    assert done["exchange-delivered"].stdout == "delivered OK\n"


HYDRA_REPORT = (b"\n" + b"=" * 83 + b"\n=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
                b"=   PID 4242 RUNNING AT node7\n=   EXIT CODE: 9\n=   CLEANING UP REMAINING PROCESSES\n"
                b"=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES\n" + b"=" * 83 + b"\n"
                b"YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)\n")


def _report_of(stdout_bytes, stderr_bytes=b""):
    """An MpiexecOutput fed with these bytes as a finished mpiexec's stdout and stderr."""
    from oneflow_compat.comm.mpiexec_report import MpiexecOutput

    class Finished:
        pass

    process = Finished()
    for name, data in (("stdout", stdout_bytes), ("stderr", stderr_bytes)):
        read_end, write_end = os.pipe()
        os.write(write_end, data)
        os.close(write_end)
        setattr(process, name, os.fdopen(read_end, "rb"))
    output = MpiexecOutput(process)
    output.wait()
    return output


def test_mpiexec_report_names_the_killed_rank_and_passes_output_on(tmp_path, capfd):
    from oneflow_compat.comm import rank_records
    from oneflow_compat.comm.mpiexec_report import exit_code, killed_process_line

    env = {rank_records.JOB_DIR_ENV: str(tmp_path)}
    assert rank_records.record_this_process(1, env) == str(tmp_path / "rank-1")
    (tmp_path / "rank-1").write_text("4242 node7\n")
    (tmp_path / "rank-0").write_text("4242 node3\n")  # the same pid on another host
    (tmp_path / "rank-2").write_text("77 node7\n")
    program = b"PID 1 RUNNING AT nowhere (a program's own line, not a report)\n"
    output = _report_of(program + HYDRA_REPORT, b"[rank 1] a partial line")
    assert capfd.readouterr() == ((program + HYDRA_REPORT).decode(), "[rank 1] a partial line")
    assert killed_process_line(output, str(tmp_path)) == "rank 1 (pid 4242 on node7) was killed by signal 9 (SIGKILL)"
    assert exit_code(output, 9) == 137
    # no record of that pid: said so, unless the launcher started one process only
    assert killed_process_line(output, str(tmp_path / "none")).startswith(
        "a process of the job whose rank is unknown (it had not started oneflow) (pid 4242 on node7)")
    assert killed_process_line(output, None, only_rank=3) == \
        "rank 3 (pid 4242 on node7) was killed by signal 9 (SIGKILL)"
    # a job that ended without MPI's report: nothing to name, mpiexec's own status
    quiet = _report_of(program)
    assert killed_process_line(quiet, str(tmp_path)) is None and exit_code(quiet, 9) == 9
    # no job folder (plain mpiexec, or a rank on another host): nothing is written
    assert rank_records.record_this_process(0, {}) is None
    assert rank_records.record_this_process(0, {rank_records.JOB_DIR_ENV: str(tmp_path / "absent")}) is None


SLEEPER = ("import os, time\nimport oneflow_compat\nprint('ready', os.getpid(), flush=True)\ntime.sleep(120)\n")


# How the launcher is started: as is, or with the signal ignored or blocked by its parent (both survive exec; a shell
# starts its background commands with SIGINT ignored, and Python then raises no KeyboardInterrupt). The launcher must
# end its job on Ctrl-C or SIGTERM whatever it inherited.
INHERITED = {
    "default": "",
    "ignored": "signal.signal(signum, signal.SIG_IGN)\n",
    "blocked": "signal.pthread_sigmask(signal.SIG_BLOCK, {signum})\n",
}
START_LAUNCHER = ("import os, signal, sys\nsignum = signal.Signals(int(sys.argv[1]))\n%s"
                  "os.execv(sys.executable, [sys.executable, '-m', 'oneflow_compat.tools.launch'] + sys.argv[2:])\n")


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to find the job's processes")
@pytest.mark.parametrize("signum, inherited", [
    (signal.SIGTERM, "default"), (signal.SIGINT, "default"), (signal.SIGINT, "ignored"),
    (signal.SIGINT, "blocked"), (signal.SIGTERM, "ignored"), (signal.SIGTERM, "blocked")],
    ids=lambda v: v.name if isinstance(v, signal.Signals) else v)
def test_a_signal_to_the_launcher_ends_the_whole_job(signum, inherited, tmp_path):
    from process_tree import descendants, wait_until_gone

    script = tmp_path / "sleeper.py"
    script.write_text(SLEEPER)
    process = subprocess.Popen([sys.executable, "-c", START_LAUNCHER % INHERITED[inherited], str(int(signum)), "-n",
                                "2", "--output", "all", str(script)], cwd=ROOT, env=environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = 0
    while ready < 2:
        line = process.stdout.readline()
        assert line, process.communicate(timeout=30)
        ready += "ready" in line
    job = descendants(process.pid)
    assert len(job) >= 5, job  # the launcher, mpiexec, hydra's proxy, two ranks
    process.send_signal(signum)
    stopped = time.perf_counter()
    try:
        process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        for pid in descendants(process.pid) + job:  # the launcher missed the signal: end what it left running
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        process.communicate()
        raise AssertionError("the launcher (started with %s %s) was still running 30 s after %s"
                             % (signum.name, inherited, signum.name)) from None
    assert process.returncode == 128 + signum
    assert time.perf_counter() - stopped < 15
    assert wait_until_gone(job) == []


@pytest.mark.parametrize("n", [2, 3])
def test_members_in_different_shared_memory_collectives_fail_naming_both(n):
    """Ranks that call different collectives over one subset of one host meet at its shared-memory board: each
    fails at once naming what every rank runs, instead of mixing their data."""
    result = mpirun(n, "comm_shm_mismatch.py", timeout=30, ONEFLOW_COMPAT_OUTPUT="all")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = sorted(result.stdout.splitlines())
    assert len(lines) == n, result.stdout
    for r, line in enumerate(lines):
        assert line.startswith("[rank %d] rank %d caught: rank %d runs %s (call signature " % (
            r, r, r, "alltoallv" if r == n - 1 else "allgatherv")), line
        assert "the ranks issue different collectives" in line
        if r == n - 1:
            assert "rank 0 runs allgatherv" in line
        else:
            assert "rank %d runs alltoallv" % (n - 1) in line


@pytest.mark.parametrize("kind,verb", [("bcast", "received"), ("allgather", "met")])
def test_object_collectives_of_different_functions_fail_naming_both(kind, verb):
    result = mpirun(2, "object_mismatch.py", kind)
    assert result.returncode != 0 and "OK matched" in result.stdout, result.stdout + result.stderr
    assert "PAIRED rank 1" not in result.stdout, result.stdout  # rank 1 never uses rank 0's object
    assert ("rank 1: %s_object in __main__.load_step %s rank 0's %s_object %s __main__.save_step: the ranks run "
            "different operations" % (kind, verb, kind, "from" if kind == "bcast" else "in")) in result.stderr, \
        result.stderr
