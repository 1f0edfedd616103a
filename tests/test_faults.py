"""Fault injection on two ranks: one rank raises, exits (sys.exit, a bare SystemExit, or a normal end while the
other still works), is killed (SIGKILL, SIGTERM, SIGSEGV) or stopped, calls another job, or skips a call after a
caught feed error; a rank is killed during a checkpoint save or overwrite; two threads call one job. Each run goes
under plain `mpiexec`, `mpiexec … -m mpi4py`, `python -m oneflow_compat.tools.launch` or
`python -m oneflow.distributed.launch`, and must end (no hang), non-zero, naming the failing rank, with no wrong
result (no rank reaches the end; the results printed before the fault are the fault-free ones) and no lost
checkpoint (every folder a save finished loads, with the values saved; an interrupted overwrite leaves the old
values, or the new ones once swapped in).

The default run is a fixed sample: every kind once, the four launchers in turn. ONEFLOW_COMPAT_SOAK=N runs N
randomized runs (kind, launcher, rank, step, kill point), covering every kind × launcher pair once per 52 runs,
and prints the tally: runs, hangs, wrong results, lost checkpoints, failures not naming their rank."""
import collections
import concurrent.futures
import importlib.util
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from process_tree import descendants
from oneflow_compat.comm import mpiexec_command
from oneflow_compat.comm.environment import is_job_variable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCRIPTS = os.path.join(HERE, "mpi_scripts")
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
COMM_TIMEOUT_S = 10  # the stopped rank is found by the comm timeout; everything else ends in seconds
LIMIT_S = 60        # a run still going after this is a hang
_DROPPED_ENV = ("PMI_", "PMIX_", "OMPI_", "MV2_", "HYDRA_", "MPI_LOCAL", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE",
                "RANK", "LOCAL_RANK", "ONEFLOW_COMPAT_OUTPUT", "ONEFLOW_COMPAT_COMM_TIMEOUT", "ONEFLOW_COMPAT_JOB_DIR",
                "ONEFLOW_COMPAT_NODE_SIZE", "ONEFLOW_COMPAT_RENDEZVOUS")

pytestmark = pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")

LAUNCHERS = ("mpiexec", "mpi4py", "tools", "distributed")
JOB_KINDS = ("raise", "exit", "sysexit", "leave", "kill", "term", "segv", "stop", "diverge", "skip")
CHECKPOINT_KINDS = ("ckpt-save", "ckpt-replace")
KINDS = JOB_KINDS + CHECKPOINT_KINDS + ("threads",)
SIGNALLED = {"kill": signal.SIGKILL, "term": signal.SIGTERM, "segv": signal.SIGSEGV}
CHECKPOINT_FILES = 17  # files a save of fault_checkpoint.py writes (8 variables × out and meta, snapshot_done)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(launcher, script_args):
    python = [sys.executable]
    if launcher == "mpiexec":
        return [MPIEXEC, "-n", "2"] + python + script_args
    if launcher == "mpi4py":
        return [MPIEXEC, "-n", "2"] + python + ["-m", "mpi4py"] + script_args
    if launcher == "tools":
        return python + ["-m", "oneflow_compat.tools.launch", "-n", "2"] + script_args
    return python + ["-m", "oneflow.distributed.launch", "--nproc_per_node", "2", "--master_port",
                     str(_free_port())] + script_args


class Run:
    def __init__(self, launcher, kind, script_args):
        self.launcher, self.kind = launcher, kind
        env = {k: v for k, v in os.environ.items() if not is_job_variable(k, _DROPPED_ENV)}
        env.update(ONEFLOW_COMPAT_COMM_TIMEOUT=str(COMM_TIMEOUT_S), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        started = time.monotonic()
        process = subprocess.Popen(command(launcher, script_args), cwd=ROOT, env=mpiexec_command.environment(MPIEXEC, env), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.hung = False
        try:
            self.stdout, self.stderr = process.communicate(timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            self.hung = True
            for pid in descendants(process.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            self.stdout, self.stderr = process.communicate()
        self.returncode = process.returncode
        self.elapsed = time.monotonic() - started
        self.output = self.stdout + self.stderr

    def fault_pid(self, rank):
        found = re.search(r"FAULT rank %d pid (\d+)" % rank, self.stderr)
        return int(found.group(1)) if found else None

    def tail(self):
        return "exit %s after %.1f s\n--- stdout\n%s\n--- stderr\n%s" % (self.returncode, self.elapsed,
                                                                     self.stdout[-1500:], self.stderr[-3000:])


def killed_pattern(launcher, rank, pid, signum):
    """What must name a rank killed by `signum`: the launchers' line, or MPICH's report (pid only) under mpiexec."""
    if launcher in ("tools", "distributed"):
        return r"rank %d \(pid %d on \S+\) was killed by signal %d \(%s\)" % (rank, pid, signum,
                                                                             signal.Signals(signum).name)
    return r"(?s)PID %d RUNNING AT \S+.*\(signal %d\)" % (pid, signum)


def named_pattern(kind, launcher, rank, pid):
    other = 1 - rank
    left = r"rank %d: .* cannot complete: rank %d \(pid %d on \S+\) left the program" % (other, rank, pid)
    return {
        "raise": r"\[rank %d\] .*ValueError: injected failure on rank %d" % (rank, rank),
        "exit": r"\[rank %d\] exited with code 3 \(sys.exit\(3\)\)" % rank,
        # under -m mpi4py, mpi4py itself aborts on SystemExit(3), and MPICH names the rank
        "sysexit": left + r"|Abort\(3\) on node \d+ \(rank %d in comm" % rank,
        "leave": left,
        "stop": r"rank %d: .* did not complete within .* Missing rank %d" % (other, rank),
        "diverge": r"rank \d runs .*(train|evaluate).* while rank \d runs .*(train|evaluate)",
        "skip": r"rank \d runs .*train.*(while rank \d runs|before it the ranks ran different)",
    }.get(kind) or killed_pattern(launcher, rank, pid, SIGNALLED[kind])


def _results(text):
    return [line for line in text.splitlines() if line.startswith("RESULT ")]


_reference = {}
_once = threading.Lock()  # the sample's runs verify in two threads


def fault_free_results():
    """The RESULT lines of a fault-free run (computed once)."""
    with _once:
        if "results" not in _reference:
            clean = Run("mpiexec", "none", [os.path.join(SCRIPTS, "fault_job.py"), "none"])
            assert clean.returncode == 0 and "finished rank 0" in clean.stdout, clean.tail()
            assert len(_results(clean.stdout)) == 8, clean.tail()
            _reference["results"] = _results(clean.stdout)
    return _reference["results"]


def _common_problems(run, kind, rank):
    problems = []
    if run.hung:
        problems.append("hang")
    elif run.returncode == 0:
        problems.append("exit 0")
    if "finished rank" in run.stdout:
        problems.append("wrong result")
    pid = run.fault_pid(rank)
    pattern = named_pattern(kind, run.launcher, rank, pid if pid is not None else -1)
    if pid is None and kind in SIGNALLED or not re.search(pattern, run.output):
        problems.append("failure not named")
    if kind in SIGNALLED and run.launcher in ("tools", "distributed") and \
            run.returncode != 128 + SIGNALLED[kind] and not run.hung:
        problems.append("exit code %s, not 128 + signal" % run.returncode)
    return problems


def run_job_fault(kind, launcher, rank, step):
    run = Run(launcher, kind, [os.path.join(SCRIPTS, "fault_job.py"), kind, str(rank), str(step)])
    problems = _common_problems(run, kind, rank)
    before = _results(run.stdout)
    if before != fault_free_results()[:len(before)] and "wrong result" not in problems:
        problems.append("wrong result")
    return run, problems


_checkpoint_script = {}


def checkpoint_crc(arrays):
    """fault_checkpoint.py's own crc of {name: array}."""
    with _once:
        if "module" not in _checkpoint_script:
            spec = importlib.util.spec_from_file_location("fault_checkpoint",
                                                          os.path.join(SCRIPTS, "fault_checkpoint.py"))
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _checkpoint_script["module"] = module
    return _checkpoint_script["module"].checkpoint_crc(arrays)


def _loaded_crc(path):
    """The crc of the checkpoint at `path`, or None when it does not load whole."""
    from oneflow_compat.framework import checkpoint_format as cf
    try:
        return checkpoint_crc({name: blob.numpy() for name, blob in cf.load_checkpoint_dir(path).items()})
    except (OSError, ValueError) as error:
        return "%s: %s" % (type(error).__name__, error)


def run_checkpoint_fault(kind, launcher, who, step, point, folder):
    """Kill rank 0 (`writer`) or rank 1 (`other`) during the save at `step`; then every checkpoint must be whole."""
    how = kind.split("-")[1]
    run = Run(launcher, kind, [os.path.join(SCRIPTS, "fault_checkpoint.py"), how, who, str(step), str(point),
                               str(folder)])
    rank = 0 if who == "writer" else 1
    problems = _common_problems(run, "kill", rank)
    saving = {int(k): int(c) for k, c in re.findall(r"^SAVING (\d+) (\d+)$", run.stdout, re.M)}
    saved = {int(k): int(c) for k, c in re.findall(r"^SAVED (\d+) (\d+)$", run.stdout, re.M)}
    if sorted(saved) != list(range(len(saved))) or len(saved) < step:
        problems.append("saves before the fault did not all finish: %s" % sorted(saved))
    lost = []
    if how == "save":
        for k in sorted(saving):
            path = os.path.join(folder, "step_%d" % k)
            if k in saved or os.path.lexists(path):  # a folder a save finished, or one that appeared: whole
                crc = _loaded_crc(path)
                if crc != saving.get(k):
                    lost.append("step_%d holds %s, saved %s" % (k, crc, saving.get(k)))
    elif saved:
        crc = _loaded_crc(os.path.join(folder, "ckpt"))
        allowed = {saved[max(saved)]}
        if who == "other":  # MPI ended the writer at any point: before the swap (old values) or after it (new)
            allowed.add(saving.get(max(saved) + 1))
        if crc not in allowed:
            lost.append("ckpt holds %s, expected one of %s" % (crc, sorted(allowed)))
    if lost:
        problems.append("lost checkpoint (%s)" % "; ".join(lost))
    return run, problems


def run_threads(launcher):
    run = Run(launcher, "threads", [os.path.join(SCRIPTS, "fault_threads.py"), "20"])
    problems = []
    if run.hung:
        problems.append("hang")
    if run.returncode != 0 or "THREADS 40 calls, wrong on ranks []" not in run.stdout:
        problems.append("wrong result")
    return run, problems


def run_kind(kind, launcher, rng, tmp_path):
    """One run of `kind` under `launcher`, its rank, step and kill point drawn from `rng`."""
    if kind == "threads":
        return run_threads(launcher)
    if kind in CHECKPOINT_KINDS:
        who = rng.choice(("writer", "other"))
        point = rng.randrange(CHECKPOINT_FILES) if who == "writer" else rng.randrange(20)
        return run_checkpoint_fault(kind, launcher, who, rng.randrange(1, 5), point, tmp_path)
    return run_job_fault(kind, launcher, rng.randrange(2), rng.randrange(7))


# ----- the default sample --------------------------------------------------------------------------------------

SAMPLE = [(kind, LAUNCHERS[i % len(LAUNCHERS)]) for i, kind in enumerate(KINDS)]


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory):
    """Every run of the sample, two at a time (most of a run's time is start-up, waiting and tearing down), the
    comm-timeout one first so that its wait overlaps the others."""
    def one(item):
        kind, launcher = item
        return run_kind(kind, launcher, random.Random("%s-%s" % item), tmp_path_factory.mktemp(kind))

    ordered = sorted(SAMPLE, key=lambda item: item[0] != "stop")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        reference = pool.submit(fault_free_results)
        results = dict(zip(ordered, pool.map(one, ordered)))
        reference.result()
    return results


@pytest.mark.parametrize("kind,launcher", SAMPLE)
def test_fault_ends_the_job_names_the_rank_and_loses_nothing(kind, launcher, sample_runs):
    run, problems = sample_runs[kind, launcher]
    assert problems == [], run.tail()
    assert run.elapsed < (COMM_TIMEOUT_S + 30 if kind == "stop" else 30), run.elapsed


def test_a_rank_failing_before_mpi_starts_ends_the_job_in_one_line(tmp_path):
    script = tmp_path / "dies_early.py"
    script.write_text("import os\nif os.environ.get('PMI_RANK') == '1':\n"
                      "    raise ImportError('injected: no oneflow here')\n"
                      "import oneflow_compat\nprint('finished', flush=True)\n")
    env = dict(os.environ, ONEFLOW_COMPAT_COMM_TIMEOUT="2", PYTHONPATH=ROOT)
    started = time.monotonic()
    processes = [subprocess.Popen([MPIEXEC, "-n", "2", sys.executable] + via + [str(script)], env=mpiexec_command.environment(MPIEXEC, env),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for via in ([], ["-m", "mpi4py"])]
    for process in processes:
        out, err = process.communicate(timeout=60)
        assert process.returncode not in (0, -9), err[-2000:]
        assert "ImportError: injected: no oneflow here" in err
        waiting = [line for line in err.splitlines() if line.startswith("[rank 0]")]
        assert waiting == ["[rank 0] MPI did not start within 2 s: another rank of this job ended or is stuck "
                           "before starting MPI (its own error, if any, is above); this rank ends too. If the ranks "
                           "only start slowly, raise ONEFLOW_COMPAT_COMM_TIMEOUT."], err
        assert "Traceback" not in err.replace("Traceback (most recent call last):\n", "", 1), err
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("text", ["nan", "-1", "0", "soon"])
def test_a_timeout_that_would_disable_the_limit_is_an_error(text):
    from oneflow_compat.comm.environment import comm_timeout_from_env
    with pytest.raises(ValueError, match="ONEFLOW_COMPAT_COMM_TIMEOUT"):
        comm_timeout_from_env({"ONEFLOW_COMPAT_COMM_TIMEOUT": text})


def test_timeout_default_and_explicit_infinity():
    from oneflow_compat.comm.environment import DEFAULT_TIMEOUT_S, comm_timeout_from_env
    assert comm_timeout_from_env({}) == DEFAULT_TIMEOUT_S == 60
    assert comm_timeout_from_env({"ONEFLOW_COMPAT_COMM_TIMEOUT": "inf"}) == float("inf")


# ----- the soak ----------------------------------------------------------------------------------------------------

TALLIED = ("hang", "wrong result", "lost checkpoint", "failure not named")


@pytest.mark.skipif(not os.environ.get("ONEFLOW_COMPAT_SOAK"), reason="soak mode: set ONEFLOW_COMPAT_SOAK=N")
def test_soak(tmp_path):
    runs = int(os.environ["ONEFLOW_COMPAT_SOAK"])
    rng = random.Random(os.environ.get("ONEFLOW_COMPAT_SOAK_SEED", "0"))
    pairs = [(kind, launcher) for kind in KINDS for launcher in LAUNCHERS]
    tally, by_kind, failures = collections.Counter(), collections.Counter(), []
    started = time.monotonic()
    for i in range(runs):
        if i % len(pairs) == 0:
            rng.shuffle(pairs)
        kind, launcher = pairs[i % len(pairs)]
        folder = tmp_path / ("run%d" % i)
        folder.mkdir()
        run, problems = run_kind(kind, launcher, rng, folder)
        tally["runs"] += 1
        by_kind[kind] += 1
        for problem in problems:
            tally[next((t for t in TALLIED if problem.startswith(t)), "other problem")] += 1
        if problems:
            failures.append((i, kind, launcher, problems, run.tail()))
    print("\nsoak: %d runs in %.0f s; hangs %d, wrong results %d, lost checkpoints %d, failures not naming their rank "
          "%d, other problems %d; runs by kind %s"
          % (tally["runs"], time.monotonic() - started, tally["hang"], tally["wrong result"],
             tally["lost checkpoint"], tally["failure not named"], tally["other problem"], dict(by_kind)))
    for item in failures:
        print("FAILED run %d: kind=%s launcher=%s %s\n%s" % item)
    assert not failures


# ----- the global-tensor API (issue 21): kill during flow.save, kill during an nn.Graph step ------------------------

def run_global_save_fault(launcher, who, step, point, folder):
    """Kill rank 0 (`writer`) or rank 1 (`other`) during the flow.save of a global state dict at `step`: every
    folder a save finished, or that appeared at all, must load whole with the values saved."""
    run = Run(launcher, "global-save", [os.path.join(SCRIPTS, "fault_global.py"), "save", who, str(step),
                                        str(point), str(folder)])
    problems = _common_problems(run, "kill", 0 if who == "writer" else 1)
    saving = {int(k): int(c) for k, c in re.findall(r"^SAVING (\d+) (\d+)$", run.stdout, re.M)}
    saved = {int(k): int(c) for k, c in re.findall(r"^SAVED (\d+) (\d+)$", run.stdout, re.M)}
    if sorted(saved) != list(range(step)):
        problems.append("saves before the fault did not all finish: %s" % sorted(saved))
    import oneflow_compat as flow

    for k in sorted(saving):
        path = os.path.join(str(folder), "step_%d" % k)
        if k in saved or os.path.lexists(path):
            try:
                loaded = flow.load(path)
                crc = checkpoint_crc({name: t.numpy() for name, t in loaded.items()})
            except (OSError, ValueError) as error:
                crc = "%s: %s" % (type(error).__name__, error)
            if crc != saving[k]:
                problems.append("lost checkpoint (step_%d holds %s, saved %s)" % (k, crc, saving[k]))
    visible = sorted(e for e in os.listdir(str(folder)) if not e.startswith("."))
    if any(e not in ["step_%d" % k for k in saving] for e in visible):
        problems.append("unexpected files %s" % visible)
    return run, problems


@pytest.mark.parametrize("launcher,who,point", [("distributed", "writer", 3), ("tools", "other", 2)])
def test_kill_during_flow_save_of_a_global_state_dict_leaves_no_half_written_folder(launcher, who, point, tmp_path):
    run, problems = run_global_save_fault(launcher, who, 2, point, tmp_path)
    assert problems == [], run.tail()
    assert run.elapsed < 30, run.elapsed
    if who == "writer":  # killed before its save finished: no step_2 folder, only the hidden partial one
        assert not os.path.exists(tmp_path / "step_2"), run.tail()


@pytest.mark.parametrize("launcher,rank", [("distributed", 1), ("tools", 0)])
def test_kill_during_an_nn_graph_step_ends_the_job_in_seconds_naming_the_rank(launcher, rank):
    run = Run(launcher, "global-graph", [os.path.join(SCRIPTS, "fault_global.py"), "graph", str(rank), "2"])
    problems = _common_problems(run, "kill", rank)
    results = [int(line.split()[1]) for line in _results(run.stdout)]
    if results != list(range(len(results))) or len(results) > 3:
        problems.append("wrong result: steps %s reported" % results)
    assert problems == [], run.tail()
    assert run.elapsed < 30, run.elapsed


@pytest.mark.parametrize("launcher,rank", [("distributed", 0), ("mpiexec", 1)])
def test_kill_during_boxing_through_shared_arenas_ends_the_job_in_seconds_naming_the_rank(launcher, rank):
    # 4 MB transitions: each rank copies straight into the other's result (comm/shm.py's arenas), so a rank dies
    # while the other pushes into its memory, reads from it or waits for it to say it is done
    run = Run(launcher, "global-boxing", [os.path.join(SCRIPTS, "fault_global.py"), "boxing", str(rank), "2"])
    problems = _common_problems(run, "kill", rank)
    results = [line.split()[1:] for line in _results(run.stdout)]
    if results != [[str(step), "ok"] for step in range(len(results))] or not 2 <= len(results) <= 3:
        problems.append("wrong result: %s reported" % results)
    assert problems == [], run.tail()
    assert run.elapsed < 30, run.elapsed
