"""api-nn's layers on global tensors on every rank (tests/test_nn_rnn.py runs it under `mpiexec -n 2`): recurrent
layers and cells, distances, deformable convolution, RMS norm, fused batch norm and the TensorFlow-style sparse
softmax cross entropy, their inputs split along the batch (or another axis) or broadcast, parameters broadcast:
outputs, input gradients, parameter gradients and running statistics equal what every rank computes alone on
local tensors (the check of nn_ops_global.py). Rank 0 prints `OK <case> <layout>` per case and layout, then DONE."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nn_ops_global import check, global_eager  # noqa: E402

import oneflow_compat as flow  # noqa: E402

nn, F = flow.nn, flow.nn.functional


def _x(*shape, seed=0, scale=1.0):
    return np.random.default_rng(seed).uniform(-scale, scale, shape).astype(np.float32)


def _flat(out):
    """(output, h) / (output, (h, c)) -> a flat tuple of tensors."""
    y, h = out
    return (y,) + (tuple(h) if isinstance(h, tuple) else (h,))


if __name__ == "__main__":
    seq = _x(5, 4, 3)  # (time, batch, features)
    check("LSTM", lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True), [seq], [[1], [None], [2]],
          rtol=1e-4, call=lambda m, x: _flat(m(x)))
    check("GRU", lambda: nn.GRU(3, 4, batch_first=True), [_x(4, 5, 3, seed=1)], [[0], [None]], rtol=1e-4,
          call=lambda m, x: _flat(m(x)))
    check("RNN", lambda: nn.RNN(3, 4, nonlinearity="relu", num_layers=2), [seq], [[1]], rtol=1e-4,
          call=lambda m, x: _flat(m(x)))
    check("LSTMCell", lambda: nn.LSTMCell(3, 4), [_x(6, 3, seed=2)], [[0], [None]], rtol=1e-4)
    a, b = _x(6, 5, seed=3), _x(6, 5, seed=4)
    check("CosineSimilarity", lambda: nn.CosineSimilarity(dim=1), [a, b], [[0, 0], [1, 1], [0, None]], rtol=1e-4)
    check("PairwiseDistance", lambda: nn.PairwiseDistance(p=3.0), [a, b], [[0, 0], [None, 0]], rtol=1e-4)
    offset = _x(2, 18, 4, 4, seed=5, scale=2.0)
    check("deform_conv2d", lambda: (lambda x, o, w, m: F.deform_conv2d(x, o, w, mask=m, padding=(1, 1))),
          [_x(2, 4, 4, 4, seed=6), offset, _x(3, 4, 3, 3, seed=7), _x(2, 9, 4, 4, seed=8)],
          [[0, 0, None, 0], [None, None, None, None]], rtol=1e-4)
    check("RMSNorm", lambda: nn.RMSNorm(5), [_x(4, 3, 5, seed=9)], [[0], [1]], rtol=1e-4)
    check("FusedBatchNorm2d", lambda: nn.FusedBatchNorm2d(3), [_x(4, 3, 2, 2, seed=10), _x(4, 3, 2, 2, seed=11)],
          [[0, 0], [None, None]], rtol=1e-4, call=lambda m, x, z: m(x, z))
    labels = np.random.default_rng(12).integers(0, 5, 6).astype(np.int64)
    check("sparse_softmax_cross_entropy", lambda: (lambda lg, lb: F.sparse_softmax_cross_entropy(lb, lg)),
          [_x(6, 5, seed=13), labels], [[0, 0], [None, None]], rtol=1e-5)
    if global_eager.rank() == 0:
        print("DONE", flush=True)
