"""Processes started by hand with OneFlow's five variables exported (en/docs/parallelism/03_consistent_tensor.md's
two terminals) join into one world without a launcher (RANK 0 serves the MPI start-up at MASTER_ADDR:MASTER_PORT,
`comm/pmi_server.py`), every process showing its own output; a missing process is named within the timeout."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_global_mpi import _env

pytest.importorskip("mpi4py")
ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "mpi_scripts" / "hand_started.py"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(rank, port, **extra):
    env = _env(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2", RANK=str(rank),
               LOCAL_RANK=str(rank), **extra)
    return subprocess.Popen(["timeout", "60", sys.executable, str(SCRIPT)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _open_mpi():
    from oneflow_compat.comm import mpiexec_command

    mpiexec = mpiexec_command.find_mpiexec()
    return bool(mpiexec) and mpiexec_command.flavour(mpiexec) == mpiexec_command.OPEN_MPI


@pytest.mark.parametrize("first", [0, 1])
def test_two_hand_started_processes_are_one_world(first):
    if _open_mpi():
        pytest.skip("processes started by hand join through MPICH's start-up; test_under_open_mpi_hand_started_"
                    "processes_are_told_how_to_start_instead checks what Open MPI gets")
    port = _free_port()
    procs = {first: _start(first, port)}
    time.sleep(0.5)  # the other one starts a moment later (either order works)
    procs[1 - first] = _start(1 - first, port)
    outs = {r: p.communicate(timeout=90) for r, p in procs.items()}
    for r, p in procs.items():
        assert p.returncode == 0, outs[r]
    assert outs[0][0].strip() == "rank 0 of 2: sbp (oneflow.sbp.split(dim=1),) sum [3.0] local [[3.0], [7.0]]"
    assert outs[1][0].strip() == "rank 1 of 2: sbp (oneflow.sbp.split(dim=1),) sum [3.0] local [[3.0], [7.0]]"


def test_a_missing_process_is_named_within_the_timeout():
    if _open_mpi():
        pytest.skip("under Open MPI a hand-started process stops at once, telling how to start instead (the GPU "
                    "machine's second run): test_under_open_mpi_hand_started_processes_are_told_how_to_start_instead")
    port = _free_port()
    started = time.monotonic()
    p = _start(1, port, ONEFLOW_COMPAT_COMM_TIMEOUT="3")  # RANK 0 never comes
    out, err = p.communicate(timeout=60)
    assert p.returncode != 0 and time.monotonic() - started < 30
    assert "the process of RANK 0 did not open MASTER_ADDR:MASTER_PORT = 127.0.0.1:%d within 3 s" % port in err


def test_under_open_mpi_hand_started_processes_are_told_how_to_start_instead():
    """With Open MPI (the GPU machine's), hand-started processes cannot join (its singletons try to start a daemon
    over ssh and die in MPI_Init): each says so at once, naming the launcher to use. Where the MPI is MPICH, the
    flavour variable stands in for Open MPI."""
    from oneflow_compat.comm import mpiexec_command

    mpiexec = mpiexec_command.find_mpiexec()
    if not mpiexec:
        pytest.skip("no mpiexec")
    env = _env(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), WORLD_SIZE="2", RANK="1", LOCAL_RANK="1")
    if not _open_mpi():
        env[mpiexec_command.FLAVOUR_ENV] = mpiexec_command.OPEN_MPI
    done = subprocess.run(["timeout", "60", sys.executable, str(SCRIPT)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=90)
    assert done.returncode != 0
    assert ("RANK=1 of WORLD_SIZE=2 was started without an MPI launcher, which works with MPICH only (rank 0 serves "
            "MPICH's start-up); this environment's MPI is Open MPI (%s): start the job with `python -m "
            "oneflow.distributed.launch --nproc_per_node N script.py`" % mpiexec) in done.stderr, done.stderr
