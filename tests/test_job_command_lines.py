"""mpiexec command lines for the MPI that is installed (comm/mpiexec_command.py): MPICH's Hydra or Open MPI.

The GPU machine's mpiexec is Open MPI 4.1.6's: it rejected Hydra's `-env` ("unknown option -env": every job of
`oneflow.distributed.launch` failed) and, run as root, refused to start without OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (tests strip OMPI_* variables from their children's environment). Here a fake
`mpiexec` that accepts only Open MPI's syntax (`-n`, `-x K[=V]`, `--host`, MPMD segments), says "Open MPI" to
`--version` and refuses root without the two variables, starts the ranks as plain local processes: the launchers'
command lines must get through it, and their processes must see what they were given."""
import os
import subprocess
import sys
import textwrap

import pytest

from oneflow_compat.comm import mpiexec_command as M
from oneflow_compat.distributed import launch as dist_launch
from oneflow_compat.tools import launch as tools_launch
from oneflow_compat.comm.environment import is_job_variable

FAKE_OPEN_MPI = textwrap.dedent('''\
    #!%(python)s
    """A stand-in for Open MPI 4.1.6's mpiexec: its syntax only; ranks are local processes."""
    import os, subprocess, sys

    args = sys.argv[1:]
    if args == ["--version"]:
        print("mpiexec (OpenRTE) 4.1.6\\n\\nReport bugs to http://www.open-mpi.org/community/help/")
        sys.exit(0)
    if os.geteuid() == 0 and not (os.environ.get("OMPI_ALLOW_RUN_AS_ROOT") == "1"
                                  and os.environ.get("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM") == "1"):
        sys.stderr.write("mpiexec has detected an attempt to run as root.\\n")
        sys.exit(1)
    segments, current, i = [], None, 0
    while i < len(args):
        a = args[i]
        if a == ":":
            current = None
        elif current is not None and current["program"] is not None:
            current["program"].append(a)  # the program's own arguments
        else:
            if current is None:
                current = {"n": 1, "env": {}, "program": None}
                segments.append(current)
            if a in ("-n", "-np", "--np"):
                current["n"] = int(args[i + 1]); i += 1
            elif a == "-x":
                name, eq, value = args[i + 1].partition("=")
                current["env"][name] = value if eq else os.environ.get(name, "")
                i += 1
            elif a in ("--host", "-H"):
                i += 1
            elif a == "--oversubscribe":
                pass
            elif a.startswith("-"):
                sys.stderr.write('%%s: Error: unknown option "%%s"\\n' %% (sys.argv[0], a))
                sys.exit(1)
            else:
                current["program"] = [a]
        i += 1
    procs = []
    for s in segments:
        env = dict(os.environ)
        for seg in segments:  # -x before the first program is global (every segment)
            if seg is s or seg is segments[0]:
                env.update(seg["env"])
        for _ in range(s["n"]):
            procs.append(subprocess.Popen(s["program"], env=env))
    sys.exit(max(p.wait() for p in procs))
    ''')


@pytest.fixture
def open_mpi(tmp_path):
    path = tmp_path / "bin" / "mpiexec"
    path.parent.mkdir()
    path.write_text(FAKE_OPEN_MPI % {"python": sys.executable})
    path.chmod(0o755)
    return str(path)


def _clean(env=None):
    """The environment without a running job's variables and without the consent to run as root (which the
    command lines must add themselves); the MPI library's configuration (OMPI_MCA_*) stays, as the launchers keep it."""
    return {k: v for k, v in (os.environ if env is None else env).items()
            if not is_job_variable(k, ("OMPI_", "PMI_", "HYDRA_")) and not k.startswith("OMPI_ALLOW_RUN_AS_ROOT")
            and k != M.FLAVOUR_ENV}


def test_the_flavour_is_what_mpiexec_version_says(open_mpi, monkeypatch):
    monkeypatch.delenv(M.FLAVOUR_ENV, raising=False)
    assert M.flavour(open_mpi) == M.OPEN_MPI
    assert M.parse_version("HYDRA build details:\n    Version: 4.2.0") == M.MPICH
    assert M.parse_version("mpiexec (Open MPI) 5.0.3") == M.OPEN_MPI
    assert M.parse_version("Intel(R) MPI Library for Linux* OS, Version 2021.6") == M.MPICH
    assert M.parse_version("something else") is None
    assert M.flavour("/no/such/mpiexec") == M.MPICH  # cannot be asked: this project's own, Hydra
    beside = M.find_mpiexec()
    if beside and "hydra" in subprocess.run([beside, "--version"], capture_output=True, text=True).stdout.lower():
        assert M.flavour(beside) == M.MPICH
    monkeypatch.setenv(M.FLAVOUR_ENV, "openmpi")
    assert M.flavour("/no/such/mpiexec") == M.OPEN_MPI
    monkeypatch.setenv(M.FLAVOUR_ENV, "lam")
    with pytest.raises(ValueError, match="ONEFLOW_COMPAT_MPI_FLAVOUR='lam': expected 'mpich' or 'openmpi'"):
        M.flavour(open_mpi)


def test_open_mpi_as_root_gets_its_two_variables_and_mpich_nothing(open_mpi, monkeypatch):
    monkeypatch.delenv(M.FLAVOUR_ENV, raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    env = M.environment(open_mpi, {"A": "1"})
    assert env == {"A": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    assert M.environment("/no/such/mpiexec", {"A": "1"}) == {"A": "1"}
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert M.environment(open_mpi, {"A": "1"}) == {"A": "1"}


def test_command_lines_in_both_spellings(open_mpi, monkeypatch):
    monkeypatch.delenv(M.FLAVOUR_ENV, raising=False)
    prog = ["python", "s.py"]
    assert M.command(2, prog, mpiexec=open_mpi, env={"K": "v"}, hosts="a:2,b") == \
        [open_mpi, "-n", "2", "-x", "K=v", "--host", "a:2,b", "python", "s.py"]
    hydra = "/no/such/mpiexec"  # (counts as Hydra)
    assert M.command(2, prog, mpiexec=hydra, env={"K": "v"}, hosts="a:2,b", forward="all") == \
        [hydra, "-n", "2", "-genvall", "-genv", "K", "v", "-hosts", "a:2,b", "python", "s.py"]
    parts = [{"n": 1, "program": prog, "env": {"RANK": "0"}}, {"n": 1, "program": prog, "env": {"RANK": "1"}}]
    assert M.segments(parts, mpiexec=hydra) == [hydra, "-n", "1", "-env", "RANK", "0", "python", "s.py", ":",
                                                "-n", "1", "-env", "RANK", "1", "python", "s.py"]
    assert M.segments(parts, mpiexec=open_mpi) == [open_mpi, "-n", "1", "env", "RANK=0", "python", "s.py", ":",
                                                   "-n", "1", "env", "RANK=1", "python", "s.py"]
    assert M.segments(parts[:1], mpiexec=open_mpi, env={"S": "1"}) == [open_mpi, "-n", "1", "env", "S=1", "RANK=0",
                                                                        "python", "s.py"]
    assert M.segments(parts[:1], mpiexec=hydra, env={"S": "1"}) == [hydra, "-genv", "S", "1", "-n", "1", "-env",
                                                                     "RANK", "0", "python", "s.py"]
    # forwarding "all" under Open MPI names the variables the ranks read, one -x each
    monkeypatch.setenv("ONEFLOW_COMPAT_OUTPUT", "all")
    line = M.command(2, prog, mpiexec=open_mpi, forward="all")
    assert line[line.index("ONEFLOW_COMPAT_OUTPUT") - 1] == "-x" and "-genvall" not in line


# one write per process (atomic on a pipe): the two processes' lines do not interleave
SHOW = ("import os; os.write(1, ('RANK %s LOCAL_RANK %s %s\\n' % (os.environ['RANK'], os.environ['LOCAL_RANK'], "
        "os.environ['WORLD_SIZE'])).encode())")


@pytest.mark.parametrize("redirect", [False, True])
def test_the_distributed_launcher_starts_its_processes_through_open_mpi(open_mpi, tmp_path, monkeypatch, redirect):
    """`python -m oneflow.distributed.launch`'s mpiexec line, under Open MPI: each process gets its RANK and
    LOCAL_RANK (with Hydra's `-env` this mpiexec said 'unknown option "-env"'), and --redirect_stdout_and_stderr
    writes each one's output to its folder."""
    monkeypatch.delenv(M.FLAVOUR_ENV, raising=False)
    argv = ["--nproc_per_node", "2", "--no_python"]
    if redirect:
        argv += ["--redirect_stdout_and_stderr", "--logdir", str(tmp_path / "log")]
    options = dist_launch.build_parser().parse_args(argv + [sys.executable, "-c", SHOW])
    folders = dist_launch.log_folders(options)
    for folder in folders.values():
        folder.mkdir(parents=True)
    command = dist_launch.mpiexec_command(options, folders, mpiexec=open_mpi)
    assert "-env" not in command
    env = M.environment(open_mpi, dist_launch.job_environment(options, _clean()))
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    if redirect:
        outs = [(folders[i] / "stdout").read_text() for i in range(2)]
        assert outs == ["RANK 0 LOCAL_RANK 0 2\n", "RANK 1 LOCAL_RANK 1 2\n"] and done.stdout == ""
    else:
        assert sorted(done.stdout.splitlines()) == ["RANK 0 LOCAL_RANK 0 2", "RANK 1 LOCAL_RANK 1 2"]


def test_the_distributed_launcher_under_open_mpi_as_root_needs_the_variables(open_mpi, monkeypatch):
    """What the GPU machine (root) showed: without the two variables the fake refuses, as Open MPI does."""
    if os.geteuid() != 0:
        pytest.skip("the refusal is of root")
    monkeypatch.delenv(M.FLAVOUR_ENV, raising=False)
    options = dist_launch.build_parser().parse_args(["--nproc_per_node", "2", "--no_python", sys.executable, "-c",
                                                     SHOW])
    command = dist_launch.mpiexec_command(options, {}, mpiexec=open_mpi)
    bare = subprocess.run(command, env=dist_launch.job_environment(options, _clean()), capture_output=True,
                          text=True, timeout=60)
    assert bare.returncode == 1 and "attempt to run as root" in bare.stderr


def test_the_tools_launcher_line_goes_through_open_mpi(open_mpi, monkeypatch):
    monkeypatch.delenv(M.FLAVOUR_ENV, raising=False)
    monkeypatch.setenv("ONEFLOW_COMPAT_SEED", "7")
    command = tools_launch.mpiexec_command(2, ["-c", "print('hello')"], mpiexec=open_mpi)
    assert command[:3] == [open_mpi, "-n", "2"] and "-genvall" not in command
    assert command[command.index("ONEFLOW_COMPAT_SEED") - 1] == "-x"
    assert command[-5:] == [sys.executable, "-m", "mpi4py", "-c", "print('hello')"]
    # the line runs (python -c in place of mpi4py's runner: this test needs no MPI)
    runnable = command[:-5] + [sys.executable, "-c",
                               "import os; os.write(1, ('seed %s\\n' % os.environ['ONEFLOW_COMPAT_SEED']).encode())"]
    done = subprocess.run(runnable, env=M.environment(open_mpi, _clean()), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["seed 7", "seed 7"]


def test_the_installed_mpiexec_runs_both_kinds_of_line(tmp_path):
    """With the mpiexec actually installed (MPICH here, Open MPI 4.1.6 on the GPU machine, run as root there): a
    line with a variable for every rank, and an MPMD line with a variable per segment, start and deliver them."""
    mpiexec = M.find_mpiexec()
    if not mpiexec:
        pytest.skip("no mpiexec")
    show = "import os; os.write(1, ('%s %s\\n' % (os.environ['SHARED'], os.environ.get('OWN', '-'))).encode())"
    env = M.environment(mpiexec, _clean())
    done = subprocess.run(M.command(2, [sys.executable, "-c", show], mpiexec=mpiexec, env={"SHARED": "s"}),
                          env=env, capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["s -", "s -"]
    parts = [{"n": 1, "program": [sys.executable, "-c", show], "env": {"OWN": str(r)}} for r in range(2)]
    done = subprocess.run(M.segments(parts, mpiexec=mpiexec, env={"SHARED": "t"}), env=env, capture_output=True,
                          text=True, timeout=120, cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(done.stdout.splitlines()) == ["t 0", "t 1"]


def test_a_rank_that_open_mpi_reports_killed_is_named():
    """Open MPI reports a rank ended by a signal in one line (Hydra in a block, tests/test_comm_mpi.py): the
    launchers name it alike."""
    from oneflow_compat.comm.mpiexec_report import MpiexecOutput, killed_process_line

    said = ("--------------------------------------------------------------------------\n"
            "mpiexec noticed that process rank 1 with PID 26063 on node node7 exited on signal 9 (Killed).\n"
            "--------------------------------------------------------------------------\n")
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stderr.write(%r)" % said],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    output = MpiexecOutput(process)
    process.wait()
    output.wait()
    assert killed_process_line(output) == "rank 1 (pid 26063 on node7) was killed by signal 9 (SIGKILL)"
