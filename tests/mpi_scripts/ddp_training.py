"""The DDP page's program (en/docs/parallelism/05_ddp.md, ddp_train.py), on any number of ranks: prints the loss
every 50 steps and the final weight, as JSON lines the test compares with a numpy reference. Also checks that
parameters are broadcast from rank 0 and buffers before each forward."""
import json

import numpy as np

import oneflow as flow
from oneflow.nn.parallel import DistributedDataParallel as ddp

train_x = [
    flow.tensor([[1, 2], [2, 3]], dtype=flow.float32),
    flow.tensor([[4, 6], [3, 1]], dtype=flow.float32),
]
train_y = [
    flow.tensor([[8], [13]], dtype=flow.float32),
    flow.tensor([[26], [9]], dtype=flow.float32),
]


class Model(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.lr = 0.01
        self.iter_count = 500
        self.w = flow.nn.Parameter(flow.tensor([[0], [0]], dtype=flow.float32))
        self.register_buffer("seen", flow.tensor([float(flow.env.get_rank())]))

    def forward(self, x):
        x = flow.matmul(x, self.w)
        return x


rank = flow.env.get_rank()
m = Model().to("cuda")
with flow.no_grad():
    # rank 0's value must win; `.data =` takes the other tensor's device too (0.9's LocalTensor::set_data swaps
    # the impl), so the new value is made on the parameter's device, as the cuda inputs need
    m.w.data = flow.tensor([[float(rank)], [float(rank)]], device="cuda")
m = ddp(m, bucket_size=1)
assert m.w.numpy().tolist() == [[0.0], [0.0]], m.w
loss = flow.nn.MSELoss(reduction="sum")
optimizer = flow.optim.SGD(m.parameters(), m.lr)
losses = []
for i in range(0, m.iter_count):
    x = train_x[rank].to("cuda")
    y = train_y[rank].to("cuda")
    y_pred = m(x)
    l = loss(y_pred, y)
    if (i + 1) % 50 == 0:
        losses.append(float(l.numpy()))
    optimizer.zero_grad()
    l.backward()
    optimizer.step()
assert m.seen.numpy().tolist() == [0.0]  # buffers broadcast from rank 0 before each forward
print(json.dumps({"rank": rank, "losses": losses, "w": m.w.numpy().ravel().tolist(), "repr": repr(m.w)}),
      flush=True)
