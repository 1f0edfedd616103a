"""Run a script as an MPI job: `python -m oneflow_compat.tools.launch -n 4 [options] script.py args…`.

Each rank runs the whole script (rank r is machine r of `flow.env.machine`), as

    <this venv>/bin/mpiexec -n N -genvall [-hosts …] <this python> -m mpi4py script.py args…

(MPICH's Hydra; under Open MPI's mpiexec the same line in its syntax: `-x NAME` per forwarded variable, `--host`,
and OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM) when run as root — comm/mpiexec_command.py.)

`-m mpi4py` makes an uncaught exception on any rank abort the whole job. The launcher's exit code is mpiexec's,
except that a rank killed by a signal is named in one line ("rank 1 (pid N on HOST) was killed by signal 9
(SIGKILL)") and gives 128 + signal; SIGTERM or Ctrl-C to the launcher end the whole job, with 128 + signal, even
where the launcher was started with them ignored (as a shell starts its background commands with SIGINT) or blocked.

Options:
  -n N              number of ranks (processes; one per machine of the job)
  --selftest        first run a quick all-reduce job over all ranks and print a report (ranks, hosts, whether the
                    sum is right, time and bandwidth for a 4 MB buffer); the script runs only if it passes
  --hosts h1,h2     hosts to start ranks on (hydra's syntax, `h1:2,h2:2` gives two slots per host; ranks fill the
                    slots in order, cycling)
  --output all      every rank's stdout, lines prefixed `[rank r] ` (default: rank 0's stdout only)

Threads: unless the user set them, OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS are set in the
children to max(1, cores // ranks on the busiest host), so that N ranks sharing a host do not each start one BLAS
thread per core (oversubscription makes N ranks slower than one). `cores` is this host's; multi-host jobs assume
hosts alike.

Several hosts: the mpiexec used is the one beside this Python (MPICH's hydra, from `pip install mpich mpi4py`).
Hydra starts its proxies over ssh (passwordless ssh to every host is needed), and the launcher passes `-genvall`,
so the children get this environment. What must hold on every host:
  * the same virtual environment at the same path (the children run `<this python>`, with the same mpich and
    mpi4py), and the script at the same path (hydra starts the ranks in the current directory);
  * forwarded environment (done by `-genvall`): PATH and VIRTUAL_ENV (so that child processes find this venv's
    tools), PYTHONPATH if used, every ONEFLOW_COMPAT_* variable (ONEFLOW_COMPAT_COMM_TIMEOUT,
    ONEFLOW_COMPAT_OUTPUT, …) and the thread variables above.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from oneflow_compat.comm import mpiexec_command as mpiexec_cmd
from oneflow_compat.comm.environment import THREAD_VARIABLES, threads_per_rank
from oneflow_compat.comm.mpiexec_report import MpiexecOutput, exit_code as report_exit_code, killed_process_line
from oneflow_compat.comm.rank_records import JOB_DIR_ENV, read_records, remove_leftover_segments

SELFTEST_BYTES = 4 * 1024 * 1024
SELFTEST_TIMEOUT_S = 120
KILL_GRACE_S = 5  # after Ctrl-C/SIGTERM, mpiexec's time to end the job before it is killed (it takes ~1 s)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # either, sent to the launcher, ends the whole job
WAIT_STEP_S = 0.1  # how soon the launcher acts on a stop signal


class LaunchError(RuntimeError):
    pass


def find_mpiexec():
    """The mpiexec of this virtual environment (beside `sys.executable`; symlinks are not followed)."""
    candidate = Path(sys.executable).parent / "mpiexec"
    if not candidate.exists():
        raise LaunchError(
            "no mpiexec beside %s (looked for %s). Install MPI into this environment: pip install mpich mpi4py"
            % (sys.executable, candidate))
    return str(candidate)


def ranks_per_host(n, hosts=None):
    """{host: ranks it gets} for hydra's placement: ranks fill the host slots in order, cycling."""
    if not hosts:
        return {"localhost": n}
    slots = []
    for entry in hosts.split(","):
        name, _, count = entry.strip().partition(":")
        if not name:
            raise LaunchError("empty host name in --hosts %r" % hosts)
        try:
            count = int(count) if count else 1
        except ValueError:
            raise LaunchError("bad slot count in --hosts entry %r" % entry) from None
        slots += [name] * count
    if not slots:
        raise LaunchError("--hosts %r names no host" % hosts)
    placed = {}
    for i in range(n):
        placed[slots[i % len(slots)]] = placed.get(slots[i % len(slots)], 0) + 1
    return placed


def child_environment(n, hosts=None, output=None, environ=None):
    """The environment for the ranks: the thread limits (unless set) and the output mode."""
    env = dict(os.environ if environ is None else environ)
    busiest = max(ranks_per_host(n, hosts).values())
    share = str(threads_per_rank(busiest))
    for name in THREAD_VARIABLES:
        env.setdefault(name, share)
    if output is not None:
        env["ONEFLOW_COMPAT_OUTPUT"] = output
    return env


def mpiexec_command(n, program, hosts=None, mpiexec=None):
    """`mpiexec -n N -genvall [-hosts H] <python> -m mpi4py <program…>` (MPICH), or Open MPI's spelling of it
    (`comm/mpiexec_command.py`: `-x` per forwarded variable, `--host`)."""
    return mpiexec_cmd.command(n, [sys.executable, "-m", "mpi4py"] + list(program), mpiexec=mpiexec or find_mpiexec(),
                               hosts=hosts, forward="all")


def run_child(command, env, timeout=None, only_rank=None):
    """Run mpiexec and return its exit code (128 + signal when a rank or mpiexec was killed by one); Ctrl-C and
    SIGTERM are passed on to the job (mpiexec ends every rank), so that stopping the launcher never leaves mpiexec
    or a rank behind. A rank that MPI reports killed by a signal is named (`comm/mpiexec_report.py`): the ranks
    record their pids in a private job folder. `only_rank`: the rank, when the job has one process."""
    job_dir = tempfile.mkdtemp(prefix="oneflow_compat-job-")
    received = []
    # The stop signals are taken whatever this process inherited. A parent may start it with SIGINT ignored (a
    # shell does so for the commands it runs in the background; exec keeps an ignored signal, and Python then
    # installs no KeyboardInterrupt) or with a stop signal blocked (a signal mask survives exec): the launcher
    # would not see Ctrl-C, and its job would run on. Caught here, each is only recorded; the wait below looks.
    previous = {s: signal.signal(s, lambda signum, frame: received.append(signum)) for s in STOP_SIGNALS}
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    try:
        env = mpiexec_cmd.environment(command[0], dict(env, **{JOB_DIR_ENV: job_dir}))  # (Open MPI as root)
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
        output = MpiexecOutput(process)
        deadline = None if timeout is None else time.monotonic() + timeout
        # a wait in short steps, not one blocking waitpid: a signal whose handler returns does not end that wait
        # (PEP 475 resumes it), nor does a signal that the kernel gave to another thread of this process
        while process.poll() is None and not received:
            if deadline is not None and time.monotonic() > deadline:
                _kill_job(process, job_dir)
                process.wait()
                raise subprocess.TimeoutExpired(command, timeout)
            try:
                process.wait(timeout=WAIT_STEP_S)
            except subprocess.TimeoutExpired:
                pass
        if received:  # the launcher was told to stop: so is the job, and whatever MPI reports is the stop itself
            _stop_job(process, job_dir, received[0])
            output.wait()
            return 128 + received[0]
        code = _exit_code(process.returncode)
        output.wait()
        line = killed_process_line(output, job_dir, only_rank)
        if line is not None:
            sys.stdout.flush()
            print("oneflow_compat.tools.launch: %s" % line, file=sys.stderr, flush=True)
        return report_exit_code(output, code)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        remove_leftover_segments(job_dir)  # of ranks killed or aborted before MPI_Finalize
        shutil.rmtree(job_dir, ignore_errors=True)


def _stop_job(process, job_dir, signum):
    """Pass `signum` on to mpiexec, which ends every rank (it takes ~1 s); after KILL_GRACE_S, kill the job."""
    if process.poll() is None:
        process.send_signal(signum)
        try:
            process.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    if process.poll() is None:
        _kill_job(process, job_dir)
        process.wait()


def _descendants(root):
    """The pids below `root` now (from /proc; empty where there is none)."""
    children = {}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
    for entry in entries:
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_job(process, job_dir):
    """mpiexec did not end when told to: kill it with everything it started here (hydra's proxy and the ranks hold
    the output pipes open, and the launcher would wait for them), found below it in /proc before it dies, and the
    ranks recorded in the job folder (killed only if their environment still names that folder: a pid may have
    been reused)."""
    below = _descendants(process.pid)
    process.kill()
    for pid in below:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass  # gone already
    host, mark = socket.gethostname(), ("%s=%s" % (JOB_DIR_ENV, job_dir)).encode()
    for pid, entries in read_records(job_dir).items():
        if not any(h == host for _, h in entries):
            continue
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                if mark not in f.read().split(b"\0"):
                    continue
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue  # gone already, or not ours to read


def _exit_code(code):
    return 128 - code if code < 0 else code


def run_selftest(n, hosts, env):
    """Run the all-reduce self-test job; returns its exit code (0 when the sum was right everywhere)."""
    command = mpiexec_command(n, ["-m", "oneflow_compat.tools.launch", "--selftest-worker"], hosts)
    try:
        return run_child(command, env, timeout=SELFTEST_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print("oneflow_compat.tools.launch: the self-test did not finish within %d s" % SELFTEST_TIMEOUT_S,
              file=sys.stderr)
        return 1


def selftest_worker():
    """Body of the self-test job (runs on every rank)."""
    import socket
    import time

    import numpy as np

    from oneflow_compat.comm import get_process_comm
    comm = get_process_comm()
    everyone = tuple(range(comm.size))
    hosts = comm.allgather_object(socket.gethostname())

    # Small integers: the float32 sum is exact in any order, so "correct" means bit-equal.
    pattern = (np.arange(SELFTEST_BYTES // 4) % 7).astype(np.float32)
    buf = pattern + np.float32(comm.rank)
    comm.allreduce_(buf, everyone)
    want = pattern * comm.size + np.float32(sum(everyone))
    correct = comm.allgather_object(bool(np.array_equal(buf, want)))

    repeats = 10
    comm.allreduce_(buf, everyone)  # warm-up: connections and buffers
    comm.barrier()
    started = time.perf_counter()
    for _ in range(repeats):
        comm.allreduce_(buf, everyone)
    per_call = max(comm.allgather_object((time.perf_counter() - started) / repeats))

    if comm.rank == 0:
        by_host = {}
        for r, host in enumerate(hosts):
            by_host.setdefault(host, []).append(r)
        algbw = SELFTEST_BYTES / per_call / 1e9
        busbw = algbw * 2 * (comm.size - 1) / comm.size
        wrong = [r for r, ok in enumerate(correct) if not ok]
        lines = ["oneflow_compat.tools.launch self-test: %d rank%s on %d host%s"
                 % (comm.size, "" if comm.size == 1 else "s", len(by_host), "" if len(by_host) == 1 else "s")]
        for host, ranks in by_host.items():
            lines.append("  host %s: ranks %s" % (host, ", ".join(map(str, ranks))))
        lines.append("  all-reduce sum over all ranks: %s"
                     % ("correct" if not wrong else "WRONG on ranks %s" % ", ".join(map(str, wrong))))
        lines.append("  all-reduce of %d MB float32: %.3f ms per call, %.2f GB/s algorithm bandwidth, "
                     "%.2f GB/s bus bandwidth" % (SELFTEST_BYTES >> 20, per_call * 1e3, algbw, busbw))
        lines.append("  threads per rank: " + ", ".join("%s=%s" % (v, os.environ.get(v, "unset"))
                                                     for v in THREAD_VARIABLES))
        print("\n".join(lines), flush=True)
    comm.barrier()
    return 0 if all(correct) else 1


DESCRIPTION = "Run a oneflow_compat script on N MPI ranks (one rank per machine of the job)."


def build_parser(prog="python -m oneflow_compat.tools.launch"):
    return add_arguments(argparse.ArgumentParser(prog=prog, description=DESCRIPTION))


def add_arguments(parser):
    """The command line of `oneflow-compat launch` and `python -m oneflow_compat.tools.launch`."""
    parser.add_argument("-n", "--np", dest="n", type=int, help="number of ranks")
    parser.add_argument("--selftest", action="store_true", help="check and time an all-reduce first")
    parser.add_argument("--hosts", help="comma-separated hosts (hydra syntax, host:slots allowed)")
    parser.add_argument("--output", choices=("rank0", "all"), help="whose stdout to show (default rank0)")
    parser.add_argument("--selftest-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("script", nargs="?", help="the script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    return parser


def main(argv=None):
    parser = build_parser()
    return run(parser.parse_args(argv), parser)


def run(options, parser):
    if options.selftest_worker:
        return selftest_worker()
    if options.n is None or options.n < 1:
        parser.error("-n N (N >= 1) is required")
    if options.script is None and not options.selftest:
        parser.error("a script to run is required (or --selftest alone)")
    try:
        ranks_per_host(options.n, options.hosts)
        find_mpiexec()
    except LaunchError as error:
        print("oneflow_compat.tools.launch: %s" % error, file=sys.stderr)
        return 2
    env = child_environment(options.n, options.hosts, options.output)
    if options.selftest:
        code = run_selftest(options.n, options.hosts, env)
        if code != 0:
            print("oneflow_compat.tools.launch: self-test failed (exit code %d); not running the script" % code,
                  file=sys.stderr)
            return code
        if options.script is None:
            return 0
    sys.stdout.flush()
    return run_child(mpiexec_command(options.n, [options.script] + options.args, options.hosts), env,
                     only_rank=0 if options.n == 1 else None)


if __name__ == "__main__":
    sys.exit(main())
