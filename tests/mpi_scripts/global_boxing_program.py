"""A global-tensor program whose ops need boxing (`python -m oneflow_compat explain` lists it)."""
import oneflow_compat as flow

P = flow.placement("cpu", [0, 1])
x = flow.randn(4, 5, placement=P, sbp=flow.sbp.split(1))
w = flow.randn(5, 8, placement=P, sbp=flow.sbp.split(0))
for _ in range(3):
    y = flow.matmul(x, w).to_global(sbp=flow.sbp.broadcast)  # P -> B: an all-reduce per call
print("result", y.shape)
