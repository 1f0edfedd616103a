"""The model-zoo examples (examples/zoo_*.py) as a user runs them: each trains on 2 devices in one process and on 2
MPI ranks (`mpiexec -n 2`, one device each) and prints the same losses; on one device, the documented defaults run
(a few steps here). The in-process numbers against 1 device and against PyTorch are the other test_zoo_* files'."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from oneflow_compat.comm import mpiexec_command

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")

# script, arguments of every run, arguments of the 2-device in-process run, of the 2-rank run
CASES = {
    "resnet50": ("zoo_resnet50.py", ["--steps", "3", "--image-size", "32", "--classes", "10",
                                     "--batch-size-per-device", "2"], ["--devices", "2"], ["--devices", "1"]),
    "bert": ("zoo_bert_pretrain.py", ["--steps", "3", "--seq-length", "16", "--vocab-size", "200",
                                      "--batch-size-per-device", "4"], ["--devices", "2"], ["--devices", "1"]),
    "wide_deep": ("zoo_wide_deep.py", ["--steps", "3", "--batch-size", "32", "--vocab-size", "300"],
                  ["--devices", "2"], ["--devices", "1"]),
    "gpt": ("zoo_gpt.py", ["--steps", "3", "--seq-length", "16", "--tensor-parallel", "2"], [], []),
}


def _losses(cmd, timeout=300):
    env = dict(os.environ, ONEFLOW_COMPAT_SEED="11")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=mpiexec_command.environment(MPIEXEC, env), cwd=ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    got = [float(m) for m in re.findall(r"^step \d+ (?:total_)?loss (\S+)", p.stdout, re.M)]
    assert got and all(np.isfinite(got)), p.stdout
    return got


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")
@pytest.mark.parametrize("case", sorted(CASES))
def test_two_ranks_equal_two_devices(case):
    script, common, in_process, ranks = CASES[case]
    path = os.path.join(ROOT, "examples", script)
    local = _losses([sys.executable, path] + common + in_process)
    mpi = _losses([MPIEXEC, "-n", "2", sys.executable, path] + common + ranks)
    assert len(local) == len(mpi) == 3
    np.testing.assert_allclose(mpi, local, rtol=1e-4)


def test_wide_deep_formats_and_defaults_run_on_one_device():
    for fmt in ("ofrecord", "synthetic"):
        assert len(_losses([sys.executable, os.path.join(ROOT, "examples", "zoo_wide_deep.py"), "--steps", "2",
                            "--dataset-format", fmt])) == 2
