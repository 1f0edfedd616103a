"""flowvision (OneFlow's torchvision, PyPI) on this implementation (issue 21, part 7): its models build, train
eagerly and as an nn.Graph to the same numbers, and data-parallel on 2 ranks equal 1 rank.

flowvision is optional: the README's set-up line installs it (`PIP_CONSTRAINT` with setuptools<81 for its sdist's
build, and tqdm, which it imports without declaring); without it these tests skip."""
import os
import subprocess
import sys

import numpy as np
import pytest

flowvision = pytest.importorskip("flowvision", reason="flowvision is not installed (README: the flowvision line "
                                                     "of the set-up installs it)")

import oneflow_compat as flow  # noqa: E402
import oneflow_compat.nn as nn  # noqa: E402
from flowvision import models  # noqa: E402
from oneflow_compat.comm import mpiexec_command

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [os.path.join(ROOT, "examples"), os.path.join(HERE, "mpi_scripts")]
from flowvision_dp import build as _build  # noqa: E402  (the models as the data-parallel script builds them)
from lenet import TrainStep, eager_train_step  # noqa: E402  (examples/lenet.py's train steps)
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


def _train(model, x, y, graph):
    loss_fn = nn.CrossEntropyLoss()
    optimizer = flow.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = TrainStep(model, optimizer, loss_fn) if graph else None
    losses = []
    for _ in range(2):
        loss = step(x, y) if graph else eager_train_step(model, optimizer, loss_fn, x, y)
        losses.append(loss.item())
    return losses, {k: v.numpy().copy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("name,size", [("squeezenet1_1", 64), ("resnet18", 32), ("vit", 32)])
def test_model_trains_eagerly_and_as_a_graph_to_the_same_numbers(name, size):
    model = _build(name)
    start = {k: flow.tensor(v.numpy().copy()) for k, v in model.state_dict().items()}
    rng = np.random.RandomState(0)
    x = flow.tensor(rng.randn(4, 3, size, size).astype(np.float32))
    y = flow.tensor(np.array([1, 2, 3, 4]))
    eager_losses, eager_state = _train(model, x, y, graph=False)
    assert np.isfinite(eager_losses).all() and eager_losses[1] != eager_losses[0]
    moved = [k for k in eager_state if not np.array_equal(eager_state[k], start[k].numpy())]
    assert moved, "the step changed no parameter"
    model.load_state_dict(start)
    graph_losses, graph_state = _train(model, x, y, graph=True)
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-6)
    for k in eager_state:  # parameters and BatchNorm running statistics
        np.testing.assert_allclose(graph_state[k], eager_state[k], rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("name", ["mobilenet_v3_small", "shufflenet_v2_x0_5", "densenet121"])
def test_more_models_run_forward_and_backward(name):
    model = getattr(models, name)(num_classes=10)
    x = flow.randn(2, 3, 32, 32, requires_grad=True)
    out = model(x)
    assert tuple(out.shape) == (2, 10)
    out.sum().backward()
    assert x.grad is not None and np.isfinite(x.grad.numpy()).all()


def _run(cmd):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT, env=mpiexec_command.environment(MPIEXEC, env))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return [line for line in out.stdout.splitlines() if line.startswith(("LOSS", "PARAMS"))]


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")
def test_data_parallel_on_two_ranks_equals_one_rank():
    """ResNet-18 (batch norm over the split batch) and a small ViT, eager and nn.Graph, in float64 (the same to
    rounding: float32 batch norm over 4 samples magnifies the summation order to 1e-4)."""
    script = os.path.join(HERE, "mpi_scripts", "flowvision_dp.py")
    one = _run([sys.executable, script, "float64"])
    two = _run([sys.executable, "-m", "oneflow.distributed.launch", "--nproc_per_node", "2", script, "float64"])
    assert len(one) == 12 and [l.rsplit(" ", 2)[0] for l in one] == [l.rsplit(" ", 2)[0] for l in two]
    for a, b in zip(one, two):  # "LOSS <model> <mode> <step> <value>", "PARAMS <model> <mode> <sum|p|> <sum p^2>"
        np.testing.assert_allclose([float(v) for v in b.split()[-2:]], [float(v) for v in a.split()[-2:]],
                                   rtol=1e-9, err_msg="%s / %s" % (a, b))


def test_resize_transform_of_an_image_equals_pillows_resize():
    """flowvision's `transforms.Resize` asks `isinstance(img, (flow.Tensor, flow._oneflow_internal.Tensor))` (the
    documentation's cookies/transfer_learning.md resizes CIFAR-10 images to 224): it then resizes through Pillow."""
    from PIL import Image
    import flowvision.transforms as transforms

    rng = np.random.default_rng(0)
    img = Image.fromarray(rng.integers(0, 256, (32, 48, 3), dtype=np.uint8))
    out = transforms.Compose([transforms.Resize(64), transforms.ToTensor()])(img)
    want = np.asarray(img.resize((96, 64), Image.BILINEAR), dtype=np.float32).transpose(2, 0, 1) / 255
    assert isinstance(out, flow.Tensor) and tuple(out.shape) == (3, 64, 96)
    np.testing.assert_allclose(out.numpy(), want, rtol=0, atol=1e-6)
