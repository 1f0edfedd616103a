"""ctc_loss's gradient where a target's last label is the blank class itself: OneFlow 0.9's kernel (v0.9.0
user/kernels/ctc_loss_kernel_util.cpp, as torch's) writes the cell of the blank at t = T_b - 1 from s = 2 S_b and then
overwrites it from s = 2 S_b - 1; found by OneFlow 0.9's test/modules/test_ctc_loss.py (blank = C - 1, labels
drawn from 1..C-1). Reference: torch's ctc_loss and its gradient."""
import numpy as np
import pytest

import oneflow as flow

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_gradient_where_targets_hold_the_blank(reduction):
    rng = np.random.RandomState(1)
    t, n, c, s = 12, 3, 5, 6
    logits = rng.rand(t, n, c)
    log_probs = logits - np.log(np.exp(logits).sum(axis=2, keepdims=True))
    targets = np.array([[4, 1, 1, 4, 2, 4], [1, 3, 4, 2, 2, 1], [3, 2, 4, 4, 3, 3]], dtype=np.int64)
    input_lengths = np.array([11, 12, 9], dtype=np.int64)
    target_lengths = np.array([6, 5, 4], dtype=np.int64)  # row 0 ends on the blank, row 2 on a blank pair
    x = flow.tensor(log_probs, requires_grad=True)
    loss = flow.nn.CTCLoss(blank=4, reduction=reduction)(
        x, flow.tensor(targets), flow.tensor(input_lengths), flow.tensor(target_lengths))
    loss.sum().backward()
    xt = torch.tensor(log_probs, requires_grad=True)
    ref = torch.nn.functional.ctc_loss(xt, torch.tensor(targets), torch.tensor(input_lengths),
                                       torch.tensor(target_lengths), blank=4, reduction=reduction)
    ref.sum().backward()
    np.testing.assert_allclose(loss.numpy(), ref.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), atol=1e-12)
