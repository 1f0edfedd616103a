"""python flowvision_dp.py [float64]

flowvision models trained data-parallel with global tensors (issue 21, part 7): parameters broadcast on every
rank of the world, the batch split along axis 0; two SGD steps eagerly, then two as an nn.Graph from the same
start. Rank 0 prints "LOSS <model> <mode> <step> <value>" and "PARAMS <model> <mode> <sum |p|> <sum p^2>", which
must be the same on 1 rank and on 2 (tests/test_flowvision.py). In float64 they agree to rounding; in float32
ResNet's batch normalisation over 1x1 maps of 4 samples magnifies the different order of the sums (1e-4)."""
import sys

import numpy as np

import oneflow as flow
import oneflow.nn as nn
import flowvision.models as models
from flowvision.models.vision_transformer import VisionTransformer


def build(name):
    flow.manual_seed(0)
    if name == "vit":
        return VisionTransformer(img_size=32, patch_size=8, embed_dim=96, depth=2, num_heads=3, num_classes=10), 32
    return getattr(models, name)(num_classes=10), 32


def main():
    world = flow.env.get_world_size()
    placement = flow.placement("cpu", ranks=list(range(world)))
    rank = flow.env.get_rank()
    rng = np.random.RandomState(0)
    dtype = np.float64 if sys.argv[1:] == ["float64"] else np.float32
    for name in ("resnet18", "vit"):
        model, size = build(name)
        if dtype == np.float64:
            model = model.double()
        model = model.to_global(placement, flow.sbp.broadcast)
        start = {k: v.to_local().numpy().copy() for k, v in model.state_dict().items()}
        x = flow.tensor(rng.randn(4, 3, size, size).astype(dtype), placement=placement, sbp=flow.sbp.split(0))
        y = flow.tensor(np.array([1, 2, 3, 4]), placement=placement, sbp=flow.sbp.split(0))
        loss_fn = nn.CrossEntropyLoss()
        for mode in ("eager", "graph"):
            model.load_state_dict({k: flow.tensor(v, placement=placement, sbp=flow.sbp.broadcast)
                                   for k, v in start.items()})
            optimizer = flow.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
            if mode == "graph":
                class Step(nn.Graph):
                    def __init__(self):
                        super().__init__()
                        self.model = model
                        self.add_optimizer(optimizer)

                    def build(self, x, y):
                        loss = loss_fn(self.model(x), y)
                        loss.backward()
                        return loss

                step = Step()
            for i in range(2):
                if mode == "eager":
                    loss = loss_fn(model(x), y)
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                else:
                    loss = step(x, y)
                value = float(loss.to_global(sbp=flow.sbp.broadcast).to_local().numpy())
                if rank == 0:
                    print("LOSS %s %s %d %.12g" % (name, mode, i, value), flush=True)
            params = [p.to_global(sbp=flow.sbp.broadcast).to_local().numpy() for p in model.parameters()]
            if rank == 0:
                print("PARAMS %s %s %.12g %.12g" % (name, mode, sum(float(np.abs(p).sum()) for p in params),
                                                   sum(float(np.square(p).sum()) for p in params)), flush=True)


if __name__ == "__main__":
    main()
