"""Runs another MPI script with "gpu" placements and "cuda" tensors on the strict fake device (tests/strict_device.py)
in each rank: `mpiexec -n N python -m mpi4py tests/mpi_scripts/on_fake_device.py SCRIPT ARGS...` (PYTHONPATH must
hold tests/). Device bugs of multi-rank programs (host and device arrays mixed, implicit syncs) show here without a
GPU; device -> host syncs are allowed (the scripts read values to print them)."""
import runpy
import sys

from _pytest.monkeypatch import MonkeyPatch

import strict_device

strict_device.install(MonkeyPatch(), "gpu", allow_syncs=True)
script, sys.argv = sys.argv[1], sys.argv[1:]
runpy.run_path(script, run_name="__main__")
