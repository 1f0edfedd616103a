"""`explain` of a program run by several ranks: the report printed once (not once per rank), every rank's boxing in
it, and a gradient's boxing labelled as a gradient."""
import os
import subprocess
import sys
import textwrap

import pytest

VENV_BIN = os.path.dirname(sys.executable)
MPIEXEC = os.path.join(VENV_BIN, "mpiexec")

DATA_PARALLEL = textwrap.dedent("""
    import oneflow as flow
    import oneflow.nn as nn
    pl = flow.placement("cpu", [0, 1])
    flow.manual_seed(0)
    m = nn.Linear(4, 3)
    m.to_global(placement=pl, sbp=flow.sbp.broadcast)
    x = flow.randn(6, 4, placement=pl, sbp=flow.sbp.split(0))
    m(x).sum().backward()
    print("done")
""")


def _env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("PMI_", "OMPI_", "MV2_", "PMIX_", "ONEFLOW_COMPAT_OUT"))
            and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")
def test_under_the_launcher_the_report_is_printed_once_with_gradients_labelled(tmp_path):
    (tmp_path / "prog.py").write_text(DATA_PARALLEL)
    done = subprocess.run(["timeout", "120", sys.executable, "-m", "oneflow.distributed.launch", "--nproc_per_node",
                           "2", "-m", "oneflow_compat", "explain", "prog.py"], cwd=str(tmp_path), env=_env(),
                          capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines.count("done") == 2  # the program's own output: every rank's, as OneFlow's launcher shows it
    assert sum(line.startswith("eager global ops:") for line in lines) == 1
    rows = [line.split() for line in lines if line.startswith("gradient ")]
    # nn.Linear's weight (3x4) and bias (3): partial sums of the two ranks all-reduced to the parameters' broadcast
    assert sorted((r[1], r[-3], r[-2], r[-1]) for r in rows) == [("3", "all-reduce", "12", "1"),
                                                                  ("3x4", "all-reduce", "48", "1")]
    assert not any(line.startswith("to_global") for line in lines)
