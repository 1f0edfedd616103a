"""Fault injection under `mpiexec -n 2`: one rank raises, exits, is killed or stopped, calls another job, or skips a
call after a caught feed error — at a random step, with and without `-m mpi4py`. Every run must end (bounded by
`timeout`), non-zero, naming the failing rank or both sides of a divergence, and rank 0 must never print "finished"
(a wrong result). The default run is a small fixed sample; ONEFLOW_COMPAT_SOAK=N runs N randomized runs and prints
the tally (hangs, wrong results, failures not naming their rank)."""
import collections
import os
import random
import re
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
JOB = os.path.join(HERE, "mpi_scripts", "fault_job.py")
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
COMM_TIMEOUT_S = 6  # the stopped rank is found by the comm timeout; everything else ends in about a second
LIMIT_S = 60

pytestmark = pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")

# mode -> what the output must say (the failing rank is rank 1)
NAMED = {
    "raise": r"\[rank 1\].*injected failure on rank 1",
    "exit": r"\[rank 1\] exited with code 3",
    "stop": r"rank 0: .* did not complete .* Missing rank 1",
    "diverge": r"rank \d runs job '(train|evaluate)' call #\d+ while rank \d runs job '(train|evaluate)' call #\d+",
    "skip": r"rank \d runs job 'train' call #\d+ while rank \d runs job 'train' call #\d+",
    "kill": None,  # MPICH reports the dead process ("BAD TERMINATION"), not its rank
}


def run_fault(mode, step, via_mpi4py):
    env = dict(os.environ, ONEFLOW_COMPAT_COMM_TIMEOUT=str(COMM_TIMEOUT_S), OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    python = [sys.executable, "-m", "mpi4py"] if via_mpi4py else [sys.executable]
    started = time.monotonic()
    p = subprocess.run(["timeout", "-s", "KILL", str(LIMIT_S), MPIEXEC, "-n", "2"] + python + [JOB, mode, str(step)],
                       capture_output=True, text=True, env=env, timeout=LIMIT_S + 30)
    return p, time.monotonic() - started


def verdict(mode, p):
    """The list of what went wrong in one run (empty: the fault was handled)."""
    problems = []
    out = p.stdout + p.stderr
    if p.returncode in (124, 137, -9):
        problems.append("hang")
    elif p.returncode == 0:
        problems.append("exit 0")
    if "finished rank" in p.stdout:
        problems.append("wrong result")
    pattern = NAMED[mode]
    if pattern is not None and not re.search(pattern, out):
        problems.append("failure not named")
    return problems


SAMPLE = [("raise", 2, False), ("exit", 1, False), ("exit", 4, True), ("diverge", 3, False), ("skip", 2, True),
          ("kill", 3, False), ("stop", 2, True)]


@pytest.mark.parametrize("mode,step,via_mpi4py", SAMPLE)
def test_fault_ends_the_job_and_names_it(mode, step, via_mpi4py):
    p, elapsed = run_fault(mode, step, via_mpi4py)
    assert verdict(mode, p) == [], (p.returncode, p.stdout[-1500:], p.stderr[-3000:])
    bound = COMM_TIMEOUT_S + 15 if mode == "stop" else 15
    assert elapsed < bound, elapsed


def test_results_before_the_fault_are_the_fault_free_ones():
    clean, _ = run_fault("none", 0, False)
    assert clean.returncode == 0 and "finished rank 0" in clean.stdout, clean.stderr[-2000:]
    p, _ = run_fault("skip", 3, False)
    before = [line for line in p.stdout.splitlines() if line.startswith("RESULT")]
    assert before == [line for line in clean.stdout.splitlines() if line.startswith("RESULT")][:len(before)]


def test_a_rank_failing_before_mpi_starts_ends_the_job(tmp_path):
    script = tmp_path / "dies_early.py"
    script.write_text("import os\nif os.environ.get('PMI_RANK') == '1':\n    raise ImportError('injected: no oneflow here')\n"
                      "import oneflow_compat\nprint('finished', flush=True)\n")
    env = dict(os.environ, ONEFLOW_COMPAT_COMM_TIMEOUT="4", PYTHONPATH=ROOT)
    for python in ([sys.executable], [sys.executable, "-m", "mpi4py"]):
        started = time.monotonic()
        p = subprocess.run(["timeout", "-s", "KILL", "40", MPIEXEC, "-n", "2"] + python + [str(script)],
                           capture_output=True, text=True, env=env, timeout=60)
        assert p.returncode not in (0, 124, 137, -9), p.stderr[-2000:]
        assert "injected: no oneflow here" in p.stderr
        assert time.monotonic() - started < 25


@pytest.mark.parametrize("text", ["nan", "-1", "0", "soon"])
def test_a_timeout_that_would_disable_the_limit_is_an_error(text):
    from oneflow_compat.comm.environment import comm_timeout_from_env
    with pytest.raises(ValueError, match="ONEFLOW_COMPAT_COMM_TIMEOUT"):
        comm_timeout_from_env({"ONEFLOW_COMPAT_COMM_TIMEOUT": text})


def test_timeout_default_and_explicit_infinity():
    from oneflow_compat.comm.environment import DEFAULT_TIMEOUT_S, comm_timeout_from_env
    assert comm_timeout_from_env({}) == DEFAULT_TIMEOUT_S == 60
    assert comm_timeout_from_env({"ONEFLOW_COMPAT_COMM_TIMEOUT": "inf"}) == float("inf")


@pytest.mark.skipif(not os.environ.get("ONEFLOW_COMPAT_SOAK"), reason="soak mode: set ONEFLOW_COMPAT_SOAK=N")
def test_soak():
    runs = int(os.environ["ONEFLOW_COMPAT_SOAK"])
    rng = random.Random(os.environ.get("ONEFLOW_COMPAT_SOAK_SEED", "0"))
    tally, failures = collections.Counter(), []
    for i in range(runs):
        mode, step, via = rng.choice(sorted(NAMED)), rng.randrange(0, 7), rng.random() < 0.5
        p, elapsed = run_fault(mode, step, via)
        problems = verdict(mode, p)
        tally["runs"] += 1
        tally[mode] += 1
        for problem in problems:
            tally[problem] += 1
        if problems:
            failures.append((i, mode, step, via, problems, p.stderr[-800:]))
    print("\nsoak: %d runs; %s" % (runs, dict(tally)))
    for item in failures:
        print("FAILED run %d: mode=%s step=%d mpi4py=%s %s\n%s" % item)
    assert not failures
