"""Process comm without MPI: the single-process backend, the helpers, environment detection, output prefixing,
and the launcher's pure functions. Nothing here may need (or import) mpi4py."""
import io
import os
import subprocess
import sys

import numpy as np
import pytest

from oneflow_compat.comm import world
from oneflow_compat.comm.output import PrefixedLineWriter
from oneflow_compat.comm.process_comm import (PlanMismatchError, SingleProcessComm, balanced_offsets,
                                              balanced_sizes, check_ranks, describe_mismatch, fingerprint_digest)
from oneflow_compat.tools import launch
from oneflow_compat.comm.environment import is_job_variable

MPI_VARIABLE_PREFIXES = ("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "SLURM_")


def clean_environment(**extra):
    env = {k: v for k, v in os.environ.items() if not is_job_variable(k, MPI_VARIABLE_PREFIXES)}
    env.update(extra)
    return env


def run_python(code, **extra_env):
    return subprocess.run([sys.executable, "-c", code], env=clean_environment(**extra_env),
                          capture_output=True, text=True, timeout=60)


# ----- balanced split ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("n,k,want", [(7, 3, [3, 2, 2]), (2, 4, [1, 1, 0, 0]), (8, 4, [2, 2, 2, 2]),
                                      (0, 3, [0, 0, 0]), (5, 1, [5])])
def test_balanced_sizes(n, k, want):
    assert balanced_sizes(n, k) == want
    assert balanced_offsets(n, k) == list(np.concatenate([[0], np.cumsum(want)]))


# ----- single-process backend -----------------------------------------------------------------------------

def test_single_process_collectives_are_identities():
    comm = SingleProcessComm()
    assert (comm.rank, comm.size, comm.world_ranks) == (0, 1, (0,))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert comm.allreduce_(x, (0,)) is x
    np.testing.assert_array_equal(x, np.arange(12, dtype=np.float32).reshape(3, 4))

    gathered = comm.allgatherv(x, (0,), axis=1, sizes=[4])
    assert gathered is not x and np.array_equal(gathered, x)
    scattered = comm.reduce_scatter(x, (0,), axis=0)
    assert scattered is not x and np.array_equal(scattered, x)
    (piece,) = comm.alltoallv([x], (0,), axis=0)
    assert piece is not x and np.array_equal(piece, x)
    assert comm.bcast_(x, 0, (0,)) is x
    assert comm.bcast_object({"a": 1}) == {"a": 1}
    assert comm.allgather_object("me") == ["me"]
    comm.barrier()
    comm.check_same(["a", "b"], "plan of job 'j'")


def test_single_process_rejects_bad_arguments():
    comm = SingleProcessComm()
    x = np.zeros(3)
    with pytest.raises(ValueError, match="out of range"):
        comm.allreduce_(x, (1,))
    with pytest.raises(ValueError, match="sizes"):
        comm.allgatherv(x, (0,), sizes=[2])
    with pytest.raises(ValueError, match="no other rank"):
        comm.send(x, 1)
    with pytest.raises(ValueError, match="no other rank"):
        comm.recv((3,), 1)
    with pytest.raises(ValueError, match="root"):
        comm.bcast_(x, 1, (0,))


def test_check_ranks():
    assert check_ranks([0, 2], 2, 4) == (0, 2)
    with pytest.raises(ValueError, match="sorted"):
        check_ranks((2, 0), 0, 4)
    with pytest.raises(ValueError, match="out of range"):
        check_ranks((0, 4), 0, 4)
    with pytest.raises(ValueError, match="not a member"):
        check_ranks((1, 2), 0, 4)


# ----- plan fingerprints ---------------------------------------------------------------------------------------

def test_fingerprint_digest_separates_items():
    assert fingerprint_digest(["ab", "c"]) != fingerprint_digest(["a", "bc"])
    assert fingerprint_digest(["a", "b"]) == fingerprint_digest(["a", "b"])
    assert fingerprint_digest(["a"]) != fingerprint_digest(["a", ""])


def test_describe_mismatch_names_first_difference_and_ranks():
    same = ["feed", "dense1-matmul", "loss"]
    assert describe_mismatch([same, list(same)], "plan") is None
    message = describe_mismatch([same, ["feed", "dense1-matmul", "relu"], same, ["feed"]],
                                "plan of job 'train_job'", item_kind="op")
    assert message == ("plan of job 'train_job' differs across ranks at op #1: ranks 0,1,2 have 'dense1-matmul', "
                       "rank 3 has nothing (its list ends after 1 ops)")
    message = describe_mismatch([same, ["feed", "dense1-matmul", "x" * 500]], "plan", item_kind="op")
    assert message.startswith("plan differs across ranks at op #2: rank 0 has 'loss', rank 1 has 'xxx")
    assert len(message) < 250


def test_check_same_raises_on_every_rank_with_gathered_lists():
    class TwoRanks(SingleProcessComm):
        """Pretends to be rank 0 of 2 whose peer holds a different list."""

        def allgather_object(self, obj):
            # first call: the digests; second call (only on a mismatch): the lists themselves
            if isinstance(obj, str):
                return [obj, fingerprint_digest(self.peer)]
            return [obj, self.peer]

    comm = TwoRanks()
    comm.peer = ["a", "B", "c"]
    want = r"^plan differs across ranks at op #1: rank 0 has 'b', rank 1 has 'B'$"
    with pytest.raises(PlanMismatchError, match=want):
        comm.check_same(["a", "b", "c"], "plan", item_kind="op")
    comm.peer = ["a", "b", "c"]
    comm.check_same(["a", "b", "c"], "plan", item_kind="op")


# ----- environment detection -----------------------------------------------------------------------------

@pytest.mark.parametrize("env,want", [
    ({}, None),
    ({"PMI_RANK": "1", "PMI_SIZE": "4"}, (1, 4)),
    ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "3", "PMI_RANK": "9"}, (2, 3)),
    ({"MV2_COMM_WORLD_RANK": "0", "MV2_COMM_WORLD_SIZE": "2"}, (0, 2)),
    ({"PMIX_RANK": "3", "SLURM_STEP_NUM_TASKS": "8"}, (3, 8)),
    ({"PMI_RANK": "0"}, None),   # a rank without a size is not enough
])
def test_detect_mpi_world(env, want):
    assert world.detect_mpi_world(env) == want


@pytest.mark.parametrize("env", [{"PMI_RANK": "4", "PMI_SIZE": "4"}, {"PMI_RANK": "x", "PMI_SIZE": "2"}])
def test_detect_mpi_world_rejects_bad_values(env):
    with pytest.raises(ValueError, match="PMI_"):
        world.detect_mpi_world(env)


def test_thread_limits():
    assert world.detect_local_size({"PMI_RANK": "0", "PMI_SIZE": "4", "MPI_LOCALNRANKS": "2"}) == 2
    assert world.detect_local_size({"PMI_RANK": "0", "PMI_SIZE": "4"}) == 4
    assert world.detect_local_size({}) == 1
    assert world.threads_per_rank(3, cores=8) == 2
    assert world.threads_per_rank(16, cores=8) == 1
    env = {"PMI_RANK": "0", "PMI_SIZE": "2", "MPI_LOCALNRANKS": "2", "MKL_NUM_THREADS": "5"}
    share = str(world.threads_per_rank(2))
    assert world.limit_blas_threads(env) == {"OMP_NUM_THREADS": share, "OPENBLAS_NUM_THREADS": share}
    assert env["MKL_NUM_THREADS"] == "5"
    assert world.limit_blas_threads({}) == {}


# ----- no MPI needed without MPI ------------------------------------------------------------------------------

def test_plain_python_never_imports_mpi4py():
    result = run_python(
        "import sys, numpy as np\n"
        "import oneflow_compat.comm as c\n"
        "comm = c.get_process_comm()\n"
        "assert type(comm).__name__ == 'SingleProcessComm', type(comm)\n"
        "assert c.get_process_comm() is comm\n"
        "x = np.ones(3); comm.allreduce_(x, (0,)); c.set_timeout(5)\n"
        "c.setup_rank_output_from_env()\n"
        "assert 'mpi4py' not in sys.modules, 'mpi4py was imported'\n"
        "print('ok')\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_mpi_size_above_one_without_mpi4py_is_a_clear_error():
    # (the package itself may already ask for the process comm at import time under MPI)
    code = ("import sys\nsys.modules['mpi4py'] = None  # as if not installed\n"
            "try:\n    import oneflow_compat.comm as c\n    c.get_process_comm()\n"
            "except Exception as e:\n    print('ERR' if type(e).__name__ == 'MPIUnavailableError' else 'OTHER', e)\n")
    result = run_python(code, PMI_RANK="1", PMI_SIZE="2")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ERR this process is rank 1 of an MPI job of 2 processes, but mpi4py")
    assert "pip install mpich mpi4py" in result.stdout
    # a world of one without mpi4py is just a single process
    code = ("import sys\nsys.modules['mpi4py'] = None\nimport oneflow_compat.comm as c\n"
            "print(type(c.get_process_comm()).__name__)\n")
    result = run_python(code, PMI_RANK="0", PMI_SIZE="1")
    assert result.stdout.strip() == "SingleProcessComm", result.stderr


# ----- output prefixing -----------------------------------------------------------------------------------

def test_prefixed_writer_emits_whole_prefixed_lines():
    target = io.StringIO()
    out = PrefixedLineWriter(target, "[rank 2] ")
    assert out.write("a") == 1
    assert target.getvalue() == ""          # a partial line waits for its end
    out.write("b\nc\nd")
    assert target.getvalue() == "[rank 2] ab\n[rank 2] c\n"
    out.flush()
    assert target.getvalue() == "[rank 2] ab\n[rank 2] c\n[rank 2] d"
    out.write("e\n\n")
    assert target.getvalue() == "[rank 2] ab\n[rank 2] c\n[rank 2] de\n[rank 2] \n"
    print("x", "y", file=out)
    assert target.getvalue().endswith("[rank 2] x y\n")


def test_raw_output_goes_out_one_whole_print_at_a_time():
    """The launcher's raw mode: print(text) is text + "\\n" in two writes; a tensor's lines and its last line's end
    must reach the shared pipe in one write, or another rank's line lands inside it."""
    from oneflow_compat.comm.output import WholeLinesWriter

    class Target(io.StringIO):
        def __init__(self):
            super().__init__()
            self.writes = []

        def write(self, text):
            self.writes.append(text)
            return super().write(text)

    target = Target()
    out = WholeLinesWriter(target)
    print("cpu:2, oneflow.Size([1, 2, 8]), \ntensor([[1., 2.]], dtype=oneflow.float32)", file=out)
    assert target.writes == ["cpu:2, oneflow.Size([1, 2, 8]), \ntensor([[1., 2.]], dtype=oneflow.float32)\n"]
    out.write("step 1 ")
    out.write("loss 0.5")
    assert len(target.writes) == 1          # nothing of an unfinished line goes out
    out.flush()
    assert target.writes[1:] == ["step 1 loss 0.5"] and target.getvalue().endswith("step 1 loss 0.5")
    out.write("x" * (WholeLinesWriter.HOLD_LIMIT - 1) + "\nab")  # long output is not held without bound
    assert target.writes[2] == "x" * (WholeLinesWriter.HOLD_LIMIT - 1) + "\n" and out._partial == "ab"
    assert out.getvalue is not None and out.encoding == target.encoding  # the rest is the stream's


# ----- launcher helpers -----------------------------------------------------------------------------------

def test_launcher_placement_and_environment():
    assert launch.ranks_per_host(4) == {"localhost": 4}
    assert launch.ranks_per_host(4, "a,b") == {"a": 2, "b": 2}
    assert launch.ranks_per_host(4, "a:2,b:1") == {"a": 3, "b": 1}
    with pytest.raises(launch.LaunchError):
        launch.ranks_per_host(2, "a:x")
    env = launch.child_environment(4, "a:2,b:1", output="all", environ={"MKL_NUM_THREADS": "3"})
    share = str(world.threads_per_rank(3))
    assert (env["OMP_NUM_THREADS"], env["OPENBLAS_NUM_THREADS"], env["MKL_NUM_THREADS"]) == (share, share, "3")
    assert env["ONEFLOW_COMPAT_OUTPUT"] == "all"
    command = launch.mpiexec_command(2, ["s.py", "--x"], hosts="a,b", mpiexec="/v/bin/mpiexec")
    assert command == ["/v/bin/mpiexec", "-n", "2", "-genvall", "-hosts", "a,b",
                       sys.executable, "-m", "mpi4py", "s.py", "--x"]


def test_launcher_without_mpiexec_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    with pytest.raises(launch.LaunchError, match="pip install mpich mpi4py"):
        launch.find_mpiexec()
    assert launch.main(["-n", "2", "script.py"]) == 2


def test_limit_loaded_blas_threads_reaches_numpys_openblas():
    import ctypes

    import numpy as np  # noqa: F401  (loads its BLAS)

    from oneflow_compat.comm import world

    libs = world.limit_loaded_blas_threads(1)
    try:
        assert libs and all("blas" in p or "mkl" in p for p in libs)
        # each OpenBLAS loaded (numpy's, and scipy's where torch or scipy brought it), under the name its build
        # exports (scipy-openblas prefixes it, and its 64-bit-integer build suffixes it)
        names = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
                 "openblas_get_num_threads64_", "openblas_get_num_threads")
        counts = {}
        for path in libs:
            lib = ctypes.CDLL(path)
            get = next((getattr(lib, n) for n in names if hasattr(lib, n)), None)
            if get is not None:
                counts[path] = get()
        assert counts and set(counts.values()) == {1}, counts
    finally:
        world.limit_loaded_blas_threads(world.usable_cores())
