"""Each simulated rank (a thread of `explain --ranks`, the tests' `on_ranks`) has its own default random
generators — the local one, the global one, the data loaders' — seeded and drawn as a separate process's, so
that N simulated ranks draw what N MPI ranks draw (they shared the module's generators: rank 1's draws followed
rank 0's on one counter, and one rank's manual_seed reseeded the other)."""
import importlib.util
import json
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat._global import generators
from oneflow_compat.kernels import random as random_k
from simulated_ranks import on_ranks

SCRIPT = os.path.join(os.path.dirname(__file__), "mpi_scripts", "rank_generators.py")


def _draws():
    spec = importlib.util.spec_from_file_location("rank_generators", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.draws


def test_simulated_ranks_draw_as_separate_processes(monkeypatch):
    monkeypatch.setenv("ONEFLOW_COMPAT_SEED", "11")
    draws = _draws()
    a, b = on_ranks(2, draws)
    for rank, out in enumerate((a, b)):
        # a fresh local generator of its own: seed derived from the variable and the rank, draws from 0
        seed = random_k.derived_seed(11, "local generator of rank %d" % rank)
        assert out["seed"] == (5 if rank == 1 else seed)
        want = generators.Generator("cpu", seed=seed).normal((3,), np.float32)
        np.testing.assert_array_equal(out["local"], want)
    assert a["local"] != b["local"] and a["weight"] != b["weight"]
    # the global generator: one seed (the variable's), the same draw on both
    want = generators.Generator("cpu", seed=11, shared=True).normal((2, 3), np.float32)
    np.testing.assert_array_equal(a["global"], want)
    np.testing.assert_array_equal(b["global"], want)
    # rank 1's manual_seed(5) reseeded rank 1 only
    np.testing.assert_array_equal(b["after"], generators.Generator("cpu", seed=5).uniform((2,), np.float32))
    assert a["after"] != b["after"]


def test_simulated_ranks_leave_the_processs_generators_alone():
    flow.manual_seed(3)
    first = flow.randn(4).numpy()
    flow.manual_seed(3)

    def body():
        flow.manual_seed(9)
        return flow.randn(4).numpy(), flow.default_generator.initial_seed()

    for values, seed in on_ranks(2, body):
        assert seed == 9
        np.testing.assert_array_equal(values, generators.Generator("cpu", seed=9).normal((4,), np.float32))
    np.testing.assert_array_equal(flow.randn(4).numpy(), first)  # the process's counter did not move
    assert flow.default_generator.initial_seed() == 3


def test_two_simulated_ranks_equal_two_mpi_ranks(monkeypatch):
    from test_comm_mpi import MPIEXEC, mpi_command, run

    if not MPIEXEC.exists():
        pytest.skip("no mpiexec beside %s" % sys.executable)
    done = run(mpi_command(2, "rank_generators.py"), timeout=120, ONEFLOW_COMPAT_SEED="11")
    assert done.returncode == 0, done.stdout + done.stderr
    by_rank = {}
    for line in done.stdout.splitlines():
        if line.startswith("RANK "):
            out = json.loads(line.split(" ", 2)[2])
            by_rank[out["rank"]] = out
    monkeypatch.setenv("ONEFLOW_COMPAT_SEED", "11")
    simulated = on_ranks(2, _draws())
    assert [by_rank[0], by_rank[1]] == simulated
