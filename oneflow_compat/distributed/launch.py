"""`python -m oneflow.distributed.launch [options] script.py args…` — OneFlow's launcher, on MPI.

Options and environment are OneFlow's (0.5–0.9, itself PyTorch 1.8's `torch.distributed.launch`):

  --nproc_per_node N   processes on this node (default 1)
  --nnodes N           nodes (default 1); run the launcher once per node, all with the same master address/port
  --node_rank K        this node's index (default 0)
  --master_addr A      address of node 0 (default 127.0.0.1)
  --master_port P      a free port on node 0 (default 29500)
  -m, --module         run `script` as a module (`python -m script`)
  --no_python          run `script` as a program itself, without `python`
  --logdir D           make `D/local_rank_<i>/` for each process (exported as GLOG_log_dir)
  --redirect_stdout_and_stderr
                       write each process's output to `D/local_rank_<i>/stdout` and `…/stderr` (D: --logdir,
                       default `log`) instead of the terminal

Each process gets MASTER_ADDR, MASTER_PORT, WORLD_SIZE = nproc_per_node·nnodes, RANK = node_rank·nproc_per_node +
local_rank, LOCAL_RANK = local_rank, and OMP_NUM_THREADS=1 when unset and nproc_per_node > 1.

How it runs: one `mpiexec` (the one beside this Python: MPICH from `pip install mpich`) starts this node's
processes, rank i with LOCAL_RANK i (MPMD segments give each its own RANK). With several nodes, the processes of
all nodes join into one MPI communicator with MPI's Open_port/Accept/Connect (`oneflow_compat/comm/join.py`): the
node-0 launcher serves the port names at master_addr:master_port (`comm/rendezvous.py`), and the launchers stay
connected there, so that processes ending with an error on any node end every node's processes.

Output: every process's output appears, unprefixed and interleaved as it comes (OneFlow's behaviour), unless
--redirect_stdout_and_stderr. Unlike OneFlow 0.9, no `log/` folder is made unless --logdir or
--redirect_stdout_and_stderr asks for one (nothing here writes GLOG logs).

Ending: the launcher's exit code is its processes' (non-zero when any failed; an uncaught exception on any rank
ends every rank within seconds); a process killed by a signal is named in one line ("rank 1 (pid N on HOST) was
killed by signal 9 (SIGKILL)", from MPI's report and the pids the ranks record in a private job folder) and the
exit code is 128 + signal; the node-0 launcher waits for every node and exits non-zero when any node's
processes failed. Ctrl-C or SIGTERM to a launcher ends its processes, and with several nodes the other nodes'
too; if the launcher itself is killed, mpiexec gets SIGTERM (Linux: parent-death signal), so nothing outlives it.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from oneflow_compat.comm import environment, launcher_env
from oneflow_compat.comm import mpiexec_command as mpiexec_cmd
from oneflow_compat.comm.mpiexec_report import MpiexecOutput, exit_code as report_exit_code, killed_process_line
from oneflow_compat.comm.rank_records import JOB_DIR_ENV, remove_leftover_segments
from oneflow_compat.comm.rendezvous import RendezvousError, RendezvousServer, connect

PROG = "python -m oneflow.distributed.launch"
LINK_TIMEOUT_S = 300.0       # how long a launcher looks for the node-0 launcher
STOP_GRACE_S = 5.0           # how long mpiexec may take to end its processes before it is killed


class LaunchError(RuntimeError):
    pass


def build_parser():
    parser = argparse.ArgumentParser(
        prog=PROG, description="Start the processes of a OneFlow global-tensor program (one per device) on MPI.")
    parser.add_argument("--nnodes", type=int, default=1, help="number of nodes (default 1)")
    parser.add_argument("--node_rank", type=int, default=0, help="this node's index (default 0)")
    parser.add_argument("--nproc_per_node", type=int, default=1, help="processes on this node (default 1)")
    parser.add_argument("--master_addr", default="127.0.0.1", help="address of node 0 (default 127.0.0.1)")
    parser.add_argument("--master_port", type=int, default=29500, help="free port on node 0 (default 29500)")
    parser.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    parser.add_argument("--no_python", action="store_true", help="run the script directly, without python")
    parser.add_argument("--redirect_stdout_and_stderr", action="store_true",
                        help="write each process's stdout/stderr to <logdir>/local_rank_<i>/stdout, stderr")
    parser.add_argument("--logdir", default=None,
                        help="folder for per-process folders local_rank_<i> (default: none; 'log' with "
                             "--redirect_stdout_and_stderr)")
    parser.add_argument("training_script", help="the script (module with -m, program with --no_python)")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER, help="its arguments")
    return parser


def check_options(options):
    if options.nproc_per_node < 1:
        raise LaunchError("--nproc_per_node must be >= 1, got %d" % options.nproc_per_node)
    if options.nnodes < 1:
        raise LaunchError("--nnodes must be >= 1, got %d" % options.nnodes)
    if not 0 <= options.node_rank < options.nnodes:
        raise LaunchError("--node_rank must be in [0, %d) for --nnodes %d, got %d"
                          % (options.nnodes, options.nnodes, options.node_rank))
    if not 0 < options.master_port < 65536:
        raise LaunchError("--master_port must be a port number, got %d" % options.master_port)
    if options.module and options.no_python:
        raise LaunchError("--module and --no_python exclude each other")


def find_mpiexec():
    """The mpiexec beside this Python (symlinks not followed: a venv's python links to the base interpreter)."""
    candidate = Path(sys.executable).parent / "mpiexec"
    if not candidate.exists():
        raise LaunchError("no mpiexec beside %s (looked for %s). Install MPI into this environment: "
                          "pip install mpich mpi4py" % (sys.executable, candidate))
    return str(candidate)


def log_folders(options):
    """{local_rank: folder} when per-process folders are asked for, else {}."""
    logdir = options.logdir or ("log" if options.redirect_stdout_and_stderr else None)
    if logdir is None:
        return {}
    base = Path(logdir).resolve()
    return {i: base / ("local_rank_%d" % i) for i in range(options.nproc_per_node)}


def job_environment(options, environ=None):
    """The environment every process of this node shares (RANK and LOCAL_RANK are set per process)."""
    env = {k: v for k, v in (os.environ if environ is None else environ).items()
           if not environment.is_job_variable(k)}  # a launcher started under mpiexec starts a new job
    env.update(MASTER_ADDR=options.master_addr, MASTER_PORT=str(options.master_port),
               WORLD_SIZE=str(options.nproc_per_node * options.nnodes))
    env[launcher_env.NODE_SIZE_ENV] = str(options.nnodes)
    env.setdefault("ONEFLOW_COMPAT_OUTPUT", "raw")  # every rank's output, as OneFlow shows it
    if options.nnodes > 1:
        env[launcher_env.RENDEZVOUS_ENV] = "launcher"
    else:
        env.pop(launcher_env.RENDEZVOUS_ENV, None)
    if options.nproc_per_node > 1 and "OMP_NUM_THREADS" not in env:
        env["OMP_NUM_THREADS"] = "1"
    if "COLUMNS" not in env:  # mpiexec relays output through pipes: tell the processes the terminal's width,
        try:                  # which OneFlow's tensor printing takes as its line width (its children print to it)
            env["COLUMNS"] = str(os.get_terminal_size(sys.stdout.fileno())[0])
        except (OSError, ValueError, AttributeError):
            pass
    for name in ("RANK", "LOCAL_RANK"):
        env.pop(name, None)
    return env


def program(options):
    """The command each process runs."""
    if options.no_python:
        return [options.training_script] + options.training_script_args
    # `-m mpi4py`: an uncaught exception aborts the whole MPI job even before the script imports oneflow
    head = [sys.executable, "-m", "mpi4py"]
    if options.module:
        head.append("-m")
    return head + [options.training_script] + options.training_script_args


def mpiexec_command(options, folders, mpiexec=None):
    """`mpiexec [output files] -n 1 -env RANK r -env LOCAL_RANK i … prog : …`, one segment per local process
    (MPICH's Hydra); Open MPI's spelling of it where that is the mpiexec (`comm/mpiexec_command.py`)."""
    prog = program(options)
    parts = []
    for local_rank in range(options.nproc_per_node):
        rank = options.node_rank * options.nproc_per_node + local_rank
        env = {"RANK": str(rank), "LOCAL_RANK": str(local_rank)}
        if folders:
            env["GLOG_log_dir"] = str(folders[local_rank])
        part = {"n": 1, "program": prog, "env": env}
        if options.redirect_stdout_and_stderr:
            # hydra puts the rank in its MPI world (= LOCAL_RANK) for %r; Open MPI's segments redirect themselves
            pattern = str(folders[0].parent / "local_rank_%r")
            part.update(pattern_stdout=pattern + "/stdout", pattern_stderr=pattern + "/stderr",
                        stdout=str(folders[local_rank] / "stdout"), stderr=str(folders[local_rank] / "stderr"))
        parts.append(part)
    return mpiexec_cmd.segments(parts, mpiexec=mpiexec or find_mpiexec())


class NodeLink:
    """This launcher's connection to the node-0 launcher (several nodes only): says how this node's processes
    ended, and hears when another node's failed. It connects while the launcher watches its processes (the
    node-0 launcher may start later); after `timeout` s without one it stops trying (processes that use oneflow
    cannot have joined then, and end with their own rendezvous error; others just run unlinked)."""

    def __init__(self, options, timeout=LINK_TIMEOUT_S):
        self.options = options
        self.channel = None
        self.deadline = time.monotonic() + timeout
        self.timeout = timeout
        self.lost = False

    def abort_reason(self, wait_s):
        """The reason to end this node's processes, if one came within `wait_s`, else None."""
        if self.lost:
            return None
        if self.channel is None:
            try:
                self.channel = connect(self.options.master_addr, self.options.master_port, wait_s)
                self.channel.send({"role": "launcher", "node": self.options.node_rank})
            except (RendezvousError, OSError):
                self.channel = None
                if time.monotonic() >= self.deadline:
                    self.lost = True
                    say("no node-0 launcher answered at %s:%d within %.0f s; an error on another node will not "
                        "end this node's processes" % (self.options.master_addr, self.options.master_port,
                                                       self.timeout))
            return None
        try:
            message = self.channel.recv(wait_s)
        except TimeoutError:
            return None
        except (EOFError, OSError):
            self.lost = True
            return "the node-0 launcher is gone"
        return message.get("abort")

    def report_exit(self, code):
        if self.channel is None:
            return
        try:
            self.channel.send({"exit": int(code)})
        except OSError:
            pass

    def close(self):
        if self.channel is not None:
            self.channel.close()


def _exit_code(code):
    return 128 - code if code < 0 else code


def stop(process, signum=signal.SIGTERM):
    """End mpiexec and so its processes (hydra passes the signal on); kill it after STOP_GRACE_S."""
    if process.poll() is not None:
        return
    try:
        process.send_signal(signum)
        process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    except ProcessLookupError:
        pass


def _end_with_launcher():
    """In mpiexec before it starts (Linux): be sent SIGTERM when the launcher dies, even by SIGKILL, so that its
    processes never outlive it. Elsewhere nothing: Ctrl-C and SIGTERM are still passed on by the launcher."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def say(text):
    sys.stdout.flush()
    print("%s: %s" % (PROG, text), file=sys.stderr, flush=True)


def run(options):
    """Start this node's processes and wait for them; returns the exit code."""
    folders = log_folders(options)
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    command = mpiexec_command(options, folders)
    server = link = None
    if options.nnodes > 1 and options.node_rank == 0:  # listening before any process asks; serving from below
        server = RendezvousServer(options.master_addr, options.master_port, options.nproc_per_node * options.nnodes)
    job_dir = tempfile.mkdtemp(prefix="oneflow_compat-job-")  # the ranks record their pids here
    env = dict(job_environment(options), **{JOB_DIR_ENV: job_dir})
    received = []
    previous = {s: signal.signal(s, lambda signum, frame: received.append(signum))
                for s in (signal.SIGINT, signal.SIGTERM)}
    # taken even where the parent started this process with them blocked (a signal mask survives exec)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))
    try:
        sys.stdout.flush()
        # Its own session: a terminal's Ctrl-C reaches the launcher only, which ends the job in order. Started
        # before any thread of this process (a fork with threads running is unsafe with preexec_fn).
        env = mpiexec_cmd.environment(command[0], env)  # (Open MPI run as root needs its two variables)
        process = subprocess.Popen(command, env=env, start_new_session=True, preexec_fn=_end_with_launcher,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        output = MpiexecOutput(process)  # passed on as it comes; MPI's report of a killed rank is read from it
        if options.nnodes > 1:
            if server is not None:
                server.start()
            link = NodeLink(options)
        aborted = None
        while process.poll() is None:
            if received:
                stop(process, received[0])
                break
            if link is not None:
                aborted = link.abort_reason(0.05)
                if aborted:
                    say("ending node %d's processes: %s" % (options.node_rank, aborted))
                    stop(process)
                    break
            else:
                try:
                    process.wait(timeout=0.05)
                except subprocess.TimeoutExpired:
                    pass
        code = _exit_code(process.wait())
        output.wait()
        if received:
            code = 128 + received[0]
        elif aborted:  # another node failed: this node's processes were ended (or had ended) because of it
            code = 1
        elif not aborted:
            line = killed_process_line(output, job_dir, options.node_rank if options.nproc_per_node == 1 else None)
            if line is not None:
                say(line)
            code = report_exit_code(output, code)
        if link is not None:
            link.report_exit(code)
            if server is not None:
                # Node 0 serves until every connected node's processes have ended, so that an error on any node
                # still ends the others; a signal ends the wait (the other launchers then see it gone).
                while server.running_launchers() - {options.node_rank} and not received:
                    time.sleep(0.1)
                failed = {n: c for n, c in server.failed_nodes().items() if n != options.node_rank}
                if failed and code == 0:  # node 0 speaks for the job: a failure anywhere is a failed job
                    say("; ".join("the processes of node %d %s" % (n, "ended with exit code %d" % c if c is not None
                                                                  else "were lost with their launcher")
                                  for n, c in sorted(failed.items())))
                    code = 1
            link.close()
        return code
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if server is not None:
            server.close()
        remove_leftover_segments(job_dir)  # of this node's ranks killed or aborted before MPI_Finalize
        shutil.rmtree(job_dir, ignore_errors=True)


def main(argv=None):
    parser = build_parser()
    options = parser.parse_args(argv)
    try:
        check_options(options)
        find_mpiexec()
        return run(options)
    except (LaunchError, RendezvousError) as error:
        say(str(error))
        return 2


if __name__ == "__main__":
    sys.exit(main())
