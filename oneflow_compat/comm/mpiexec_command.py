"""mpiexec command lines and environments for the MPI that is actually installed: every place that starts an MPI job
(the launchers, the GPU check, the tests) builds them here.

Two families of mpiexec, told apart by what `mpiexec --version` prints (`flavour`):

* MPICH's Hydra (the `pip install mpich` wheel, Intel MPI, MVAPICH): an environment variable for every rank is
  `-genv NAME VALUE`, for the ranks of one MPMD segment `-env NAME VALUE`; `-genvall` forwards the whole
  environment to remote hosts; `-hosts h1:2,h2` places ranks; `-outfile-pattern`/`-errfile-pattern` redirect a
  segment's output.
* Open MPI's mpirun (`mpiexec --version` says "mpiexec (Open MPI) 4.1.6"): it rejects all of those ("unknown
  option -env"). A variable is `-x NAME=VALUE` (`-x NAME` forwards the caller's value), hosts are `--host
  h1:2,h2`; it refuses to run as root unless OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 are
  in its environment (`environment` adds them where this process is root, which the GPU machines are). Local ranks
  inherit mpirun's environment; remote ones get the `-x` variables. Variables of one MPMD segment are given as
  `env NAME=VALUE program…` (POSIX env(1)), which needs no launcher option at all, and output files by a `sh -c`
  redirect.

`mpiexec --version` runs once per mpiexec path (`flavour` caches it). ONEFLOW_COMPAT_MPI_FLAVOUR=mpich|openmpi
overrides the detection (an mpiexec that cannot be asked, or a wrapper script).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

MPICH, OPEN_MPI = "mpich", "openmpi"
FLAVOUR_ENV = "ONEFLOW_COMPAT_MPI_FLAVOUR"
ROOT_VARIABLES = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}

_FLAVOURS = {}  # mpiexec path -> flavour


def find_mpiexec():
    """The mpiexec of this virtual environment (beside `sys.executable`, symlinks not followed), else the one on
    PATH; None where there is none."""
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return str(beside)
    return shutil.which("mpiexec")


def parse_version(text):
    """The flavour an `mpiexec --version` output names (None where it names neither)."""
    lowered = text.lower()
    if "open mpi" in lowered or "openrte" in lowered or "open-mpi" in lowered:
        return OPEN_MPI
    if "hydra" in lowered or "mpich" in lowered or "intel(r) mpi" in lowered or "mvapich" in lowered:
        return MPICH
    return None


def flavour(mpiexec=None):
    """MPICH or OPEN_MPI: which mpiexec `mpiexec` is (default: `find_mpiexec()`), from its `--version` output.
    An mpiexec that cannot be asked, or answers neither, counts as MPICH's Hydra (the one this project installs)."""
    forced = os.environ.get(FLAVOUR_ENV, "").strip().lower()
    if forced:
        if forced not in (MPICH, OPEN_MPI):
            raise ValueError("%s=%r: expected %r or %r" % (FLAVOUR_ENV, os.environ[FLAVOUR_ENV], MPICH, OPEN_MPI))
        return forced
    mpiexec = str(mpiexec or find_mpiexec() or "mpiexec")
    found = _FLAVOURS.get(mpiexec)
    if found is None:
        try:
            done = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30,
                                  env=dict(os.environ, **ROOT_VARIABLES), stdin=subprocess.DEVNULL)
            found = parse_version(done.stdout + done.stderr) or MPICH
        except (OSError, subprocess.SubprocessError):
            found = MPICH
        _FLAVOURS[mpiexec] = found
    return found


def environment(mpiexec=None, env=None):
    """The environment to start `mpiexec` with: `env` (default: this process's), plus, for Open MPI run as root,
    the two variables without which it refuses to start."""
    env = dict(os.environ if env is None else env)
    if flavour(mpiexec) == OPEN_MPI and hasattr(os, "geteuid") and os.geteuid() == 0:
        for name, value in ROOT_VARIABLES.items():
            env.setdefault(name, value)
    return env


def _global_env(kind, env, forward):
    out = []
    if kind == OPEN_MPI:
        for name in forward or ():
            out += ["-x", name]
        for name, value in (env or {}).items():
            out += ["-x", "%s=%s" % (name, value)]
    else:
        if forward == "all":
            out.append("-genvall")
        elif forward:
            out += ["-genvlist", ",".join(forward)]
        for name, value in (env or {}).items():
            out += ["-genv", name, str(value)]
    return out


def command(n, program, mpiexec=None, env=None, hosts=None, forward=None):
    """`mpiexec -n N [hosts] [variables] program…` for the installed MPI.

    `env`: {name: value} set in every rank; `hosts`: Hydra's `h1:2,h2` syntax (Open MPI's `--host` takes the
    same); `forward`: "all" (every variable of the caller, for ranks on remote hosts: Hydra's `-genvall`; Open MPI
    has no such option, so the caller's ONEFLOW_COMPAT_*, thread, PATH and Python variables are named one by one)
    or a list of variable names to forward."""
    mpiexec = str(mpiexec or find_mpiexec() or "mpiexec")
    kind = flavour(mpiexec)
    out = [mpiexec, "-n", str(int(n))]
    if kind == OPEN_MPI and forward == "all":
        forward = forwarded_names(os.environ)
    out += _global_env(kind, env, forward)
    if hosts:
        out += ["--host", hosts] if kind == OPEN_MPI else ["-hosts", hosts]
    return out + [str(a) for a in program]


FORWARDED_PREFIXES = ("ONEFLOW_COMPAT_", "OMP_", "OPENBLAS_", "MKL_", "CUDA_", "NCCL_", "CUPY_")
FORWARDED_NAMES = ("PATH", "VIRTUAL_ENV", "PYTHONPATH", "LD_LIBRARY_PATH", "PYTHONUNBUFFERED", "COLUMNS", "GLOG_log_dir")


def forwarded_names(environ):
    """What `forward="all"` forwards under Open MPI: the variables the ranks read (this package's, the thread
    limits, CUDA's and NCCL's, where to find Python and its packages) that are set."""
    return sorted(name for name in environ if name in FORWARDED_NAMES or name.startswith(FORWARDED_PREFIXES))


def segments(parts, mpiexec=None, env=None):
    """An MPMD command line, one segment per part: each part is a dict with `n` (ranks), `program` (argv),
    optional `env` ({name: value} for its ranks alone) and `stdout`/`stderr` (files its ranks write their output
    to). `env` (optional) is set in every rank.

    MPICH: `mpiexec [-genv …] -n 1 -env RANK 0 prog : -n 1 -env RANK 1 prog`, output files by
    `-outfile-pattern`/`-errfile-pattern` (Hydra's, given before the first segment, with `%r` for the rank: pass
    them as `pattern_stdout`/`pattern_stderr` in the first part). Open MPI: `mpiexec -n 1 env K=V RANK=0 prog : …`
    (every rank's variables and the segment's own by env(1)), output files by a `sh -c` redirect of each segment."""
    mpiexec = str(mpiexec or find_mpiexec() or "mpiexec")
    kind = flavour(mpiexec)
    # Open MPI: the variables of every rank go into each segment's `env` too (whether a -x before the first
    # segment reaches the others is not something to rely on)
    out = [mpiexec] + (_global_env(kind, env, None) if kind == MPICH else [])
    if kind == MPICH and parts and parts[0].get("pattern_stdout"):
        out += ["-outfile-pattern", parts[0]["pattern_stdout"], "-errfile-pattern", parts[0]["pattern_stderr"]]
    for i, part in enumerate(parts):
        if i:
            out.append(":")
        out += ["-n", str(int(part.get("n", 1)))]
        program = [str(a) for a in part["program"]]
        own = part.get("env") or {}
        if kind == MPICH:
            for name, value in own.items():
                out += ["-env", name, str(value)]
            out += program
            continue
        own = dict(env or {}, **own)
        if part.get("stdout") or part.get("stderr"):
            # the files and the program as arguments of the shell, never parsed by it
            out_file, err_file = part.get("stdout") or "/dev/stdout", part.get("stderr") or "/dev/stderr"
            program = ["sh", "-c", 'o=$1; e=$2; shift 2; exec "$@" >"$o" 2>"$e"', "sh", out_file, err_file] + program
        if own:
            program = ["env"] + ["%s=%s" % (name, value) for name, value in own.items()] + program
        out += program
    return out
