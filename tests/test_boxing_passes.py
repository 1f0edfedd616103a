"""What one `to_global` costs each rank, counted (bytes copied and summed, arrivals, comm calls), held against the
least each transition needs on 2 and 4 MPI ranks of one host: tests/mpi_scripts/boxing_passes.py (its docstring
lists the figures). A change that adds a copy, a pass over a result, a synchronisation or a collective to a row fails
here, whatever the machine's load (benchmarks/bench_boxing.py times the same rows)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from oneflow_compat.comm import mpiexec_command
from oneflow_compat.comm.environment import is_job_variable

pytest.importorskip("mpi4py")

ROOT = Path(__file__).resolve().parent.parent
MPIEXEC = Path(sys.executable).parent / "mpiexec"
_MPI_PREFIXES = ("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "ONEFLOW_COMPAT_")

pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)


def _may_read_another_process():
    """Whether this process may read a child's memory with process_vm_readv (what the ranks probe among
    themselves: the same user, the same container)."""
    from oneflow_compat.comm import cross_memory
    import numpy as np
    if not cross_memory.wanted():
        return False
    child = subprocess.Popen([sys.executable, "-c", "import numpy as np, os, sys\n"
                              "a = np.arange(4, dtype=np.int64) + 7\n"
                              "print(os.getpid(), a.__array_interface__['data'][0], flush=True)\n"
                              "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pid, where = map(int, child.stdout.readline().split())
        into = np.zeros(4, np.int64)
        try:
            cross_memory.read(pid, where, into)
        except OSError:
            return False
        return into.tolist() == [7, 8, 9, 10]
    finally:
        child.communicate("", timeout=30)


@pytest.mark.parametrize("reads", [True, False], ids=["reads", "no-reads"])
@pytest.mark.parametrize("n", [2, 4])
def test_every_row_moves_the_least_bytes_in_one_call(n, reads):
    """`reads`: the receivers of a slice-boxing read their pieces out of the senders' memory (comm/cross_memory.py);
    without (ONEFLOW_COMPAT_SHM_READ=0, or a platform that refuses it) the senders push them or MPI moves them."""
    if reads and not _may_read_another_process():
        pytest.skip("this platform refuses process_vm_readv between processes (or ONEFLOW_COMPAT_SHM_READ=0)")
    env = {k: v for k, v in os.environ.items() if not is_job_variable(k, _MPI_PREFIXES)}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               EXPECT_READS="1" if reads else "0")
    if not reads:
        env["ONEFLOW_COMPAT_SHM_READ"] = "0"
    done = subprocess.run([str(MPIEXEC), "-n", str(n), sys.executable, "-m", "mpi4py",
                           str(ROOT / "tests" / "mpi_scripts" / "boxing_passes.py")], cwd=ROOT,
                          env=mpiexec_command.environment(MPIEXEC, env), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "passes OK: %d rows over %d ranks\n" % (13 if n == 2 else 14, n)


def test_one_rank_that_may_not_read_turns_reads_off_on_every_rank():
    """The members decide alike whether they read each other's memory (a probe when their board is made): where one
    of them may not (here its ONEFLOW_COMPAT_SHM_READ=0), none reads, and every row moves what it moved before."""
    env = {k: v for k, v in os.environ.items() if not is_job_variable(k, _MPI_PREFIXES)}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", EXPECT_READS="0",
               ONE_RANK_REFUSES_READS="1")
    done = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable, "-m", "mpi4py",
                           str(ROOT / "tests" / "mpi_scripts" / "boxing_passes.py")], cwd=ROOT,
                          env=mpiexec_command.environment(MPIEXEC, env), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "passes OK: 13 rows over 2 ranks\n"


def test_a_read_that_fails_names_the_sender_and_nobody_hangs():
    """A receiver whose read of its sender's memory fails (the kernel refuses it mid-job) raises CommError naming
    the sender and the bytes; the sender, waiting for its receivers to be through with its memory, is released
    (the receiver says so before raising) and the job ends in seconds through the failure handlers."""
    if not _may_read_another_process():
        pytest.skip("this platform refuses process_vm_readv between processes")
    env = {k: v for k, v in os.environ.items() if not is_job_variable(k, _MPI_PREFIXES)}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", ONEFLOW_COMPAT_COMM_TIMEOUT="60")
    done = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable, "-m", "mpi4py",
                           str(ROOT / "tests" / "mpi_scripts" / "exchange_read_failure.py")], cwd=ROOT,
                          env=mpiexec_command.environment(MPIEXEC, env), capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "sender released" in done.stdout, done.stdout + done.stderr
    assert re.search(r"CommError: rank 1, in eager op 'to_global' .*: exchange on rank 1: reading the 2097152 bytes rank 0 offers failed \(\[Errno 1\] "
                     r"refused for the test\)", done.stderr), done.stderr
