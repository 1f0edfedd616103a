"""The nn ops family's global modules on 2 ranks (`mpiexec -n 2`, tests/mpi_scripts/nn_ops_global.py): each case's
outputs, input gradients and parameter gradients with its inputs split along the batch, along another axis, or
broadcast equal what every rank computes alone on local tensors."""
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_global_mpi import MPIEXEC, SCRIPTS, mpi  # noqa: E402

pytest.importorskip("mpi4py")
pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)

# family -> the cases it must report, each with its layouts (input split axes, None = broadcast)
EXPECTED = {
    "activations": {name: ["[0]", "[1]"] for name in (
        "ReLU6", "ELU", "Hardsigmoid", "Hardswish", "Hardtanh", "Mish", "SiLU", "Softplus", "LogSigmoid", "GELU",
        "GELU_tanh", "LeakyReLU", "Softmax", "LogSoftmax", "Sigmoid", "Tanh")},
}
EXPECTED["activations"]["PReLU"] = ["[0]", "[1]", "[None]"]
EXPECTED["losses"] = {name: ["[0, 0]", "[1, 1]"] for name in (
    "BCELoss", "BCEWithLogitsLoss", "L1Loss", "MSELoss", "SmoothL1Loss", "KLDivLoss")}
EXPECTED["losses"].update({"MarginRankingLoss": ["[0, 0, 0]", "[None, None, None]"],
                           "TripletMarginLoss": ["[0, 0, 0]", "[1, 1, 1]"], "NLLLoss": ["[0, 0]"],
                           "CombinedMarginLoss": ["[0, 0]", "[1, None]"]})
EXPECTED["norms"] = {"BatchNorm2d": ["[0]", "[1]", "[2]"], "BatchNorm1d": ["[0]", "[1]"],
                     "BatchNorm2d_eval": ["[0]", "[1]"], "LayerNorm": ["[0]", "[1]", "[2]"],
                     "GroupNorm": ["[0]", "[1]"], "InstanceNorm2d": ["[0]", "[1]"]}
EXPECTED["pools"] = {name: ["[0]", "[1]"] for name in ("MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "MaxPool1d",
                                                       "AvgPool3d")}
EXPECTED["misc"] = {"Embedding": ["[0]", "[1]", "[None]"]}
EXPECTED["misc"].update({name: ["[0]", "[1]"] for name in ("PixelShuffle", "Upsample", "ReflectionPad2d",
                                                          "ReplicationPad2d")})
EXPECTED["convs"] = {name: ["[0]", "[1]", "[None]"] for name in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose2d")}


def test_nn_ops_on_two_ranks_equal_one_rank():
    done = mpi(2, SCRIPTS / "nn_ops_global.py", timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert done.stdout.rstrip().endswith("DONE"), done.stdout[-2000:]
    seen = {}
    for line in done.stdout.splitlines():
        m = re.match(r"OK (\S+) (.*)$", line)
        if m:
            seen.setdefault(m.group(1), []).append(m.group(2).replace(" ", ""))
    for family, cases in EXPECTED.items():
        for name, layouts in cases.items():
            assert seen.get(name) == [lay.replace(" ", "") for lay in layouts], (family, name, seen.get(name))
