"""cross_entropy on a batch split over 3 ranks (tests/test_global_mpi.py runs it), against the numpy value of the
whole batch: labels of the default ignore_index (-100) in the batch are an error naming the remedy; passed
explicitly, they are ignored and the mean is over the kept labels of all ranks, as OneFlow computes it; its
gradient too. Prints `OK ...` (rank 0's output is shown); a failed check raises."""
import numpy as np

import oneflow as flow

rank = flow.env.get_rank()
placement = flow.placement("cpu", ranks=[0, 1, 2])
rng = np.random.default_rng(0)
logits = rng.standard_normal((9, 4))
labels = np.array([1, -100, 3, 0, 2, -100, -100, 1, 3])
x = flow.tensor(logits[3 * rank:3 * rank + 3], requires_grad=True)
gx = x.to_global(placement=placement, sbp=flow.sbp.split(0))
gy = flow.tensor(labels[3 * rank:3 * rank + 3]).to_global(placement=placement, sbp=flow.sbp.split(0))

try:
    flow.nn.functional.cross_entropy(gx, gy)
except ValueError as e:
    assert "label -100 is out of range [0, 4)" in str(e), e
    assert any("pass ignore_index=-100 explicitly" in note for note in getattr(e, "__notes__", [])), e
else:
    raise AssertionError("the default ignore_index's labels were not refused")
print("OK the default ignore_index on several ranks names the remedy", flush=True)

loss = flow.nn.functional.cross_entropy(gx, gy, ignore_index=-100)
z = logits - logits.max(1, keepdims=True)
log_p = z - np.log(np.exp(z).sum(1, keepdims=True))
kept = labels != -100
want = -log_p[np.arange(9)[kept], labels[kept]].sum() / kept.sum()
np.testing.assert_allclose(float(loss.numpy()), want, rtol=1e-12)
loss.backward()
p = np.exp(log_p)
grad = (p - np.eye(4)[np.where(kept, labels, 0)]) * kept[:, None] / kept.sum()
np.testing.assert_allclose(x.grad.numpy(), grad[3 * rank:3 * rank + 3], rtol=1e-10, atol=1e-12)
print("OK an explicit ignore_index=-100 gives the mean over the kept labels of every rank", flush=True)
