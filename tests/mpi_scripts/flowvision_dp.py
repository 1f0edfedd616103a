"""python flowvision_dp.py [float64]

flowvision models trained data-parallel with global tensors (issue 21, part 7): parameters broadcast on every
rank of the world, the batch split along axis 0; two SGD steps eagerly, then two as an nn.Graph from the same
start. Rank 0 prints "LOSS <model> <mode> <step> <value>" and "PARAMS <model> <mode> <sum |p|> <sum p^2>", which
must be the same on 1 rank and on 2 (tests/test_flowvision.py). In float64 they agree to rounding; in float32
ResNet's batch normalisation over 1x1 maps of 4 samples magnifies the different order of the sums (1e-4)."""
import os
import sys

import numpy as np

import oneflow as flow
import oneflow.nn as nn
import flowvision.models as models
from flowvision.models.vision_transformer import VisionTransformer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "examples"))
from lenet import TrainStep, eager_train_step  # noqa: E402  (examples/lenet.py's train steps)


def build(name):
    """flowvision's `name` (or "vit": a small VisionTransformer) for 10 classes, from seed 0, its dropout off (it
    draws differently eagerly and in a graph; also imported by tests/test_flowvision.py)."""
    flow.manual_seed(0)
    if name == "vit":
        model = VisionTransformer(img_size=32, patch_size=8, embed_dim=96, depth=2, num_heads=3, num_classes=10)
    else:
        model = getattr(models, name)(num_classes=10)
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    return model


def main():
    world = flow.env.get_world_size()
    placement = flow.placement("cpu", ranks=list(range(world)))
    rank = flow.env.get_rank()
    rng = np.random.RandomState(0)
    dtype = np.float64 if sys.argv[1:] == ["float64"] else np.float32
    for name in ("resnet18", "vit"):
        model = build(name)
        if dtype == np.float64:
            model = model.double()
        model = model.to_global(placement, flow.sbp.broadcast)
        start = {k: v.to_local().numpy().copy() for k, v in model.state_dict().items()}
        x = flow.tensor(rng.randn(4, 3, 32, 32).astype(dtype), placement=placement, sbp=flow.sbp.split(0))
        y = flow.tensor(np.array([1, 2, 3, 4]), placement=placement, sbp=flow.sbp.split(0))
        loss_fn = nn.CrossEntropyLoss()
        for mode in ("eager", "graph"):
            model.load_state_dict({k: flow.tensor(v, placement=placement, sbp=flow.sbp.broadcast)
                                   for k, v in start.items()})
            optimizer = flow.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
            step = TrainStep(model, optimizer, loss_fn) if mode == "graph" else None
            for i in range(2):
                loss = step(x, y) if step is not None else eager_train_step(model, optimizer, loss_fn, x, y)
                value = float(loss.to_global(sbp=flow.sbp.broadcast).to_local().numpy())
                if rank == 0:
                    print("LOSS %s %s %d %.12g" % (name, mode, i, value), flush=True)
            params = [p.to_global(sbp=flow.sbp.broadcast).to_local().numpy() for p in model.parameters()]
            if rank == 0:
                print("PARAMS %s %s %.12g %.12g" % (name, mode, sum(float(np.abs(p).sum()) for p in params),
                                                   sum(float(np.square(p).sum()) for p in params)), flush=True)


if __name__ == "__main__":
    main()
