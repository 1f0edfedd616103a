"""`flow.stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode='reflect',
normalized=False, onesided=True, return_complex=False)`: the short-time Fourier transform as OneFlow v0.9.0
defines it (functional_api.yaml `stft`; oneflow/core/functional/impl/math_functor.cpp StftFunctor;
oneflow/user/ops/stft_op.cpp and kernels/stft_kernel.cpp).

Steps (the functor's): a 1-D signal is one row of a batch; with `center` each row is padded by n_fft // 2 on both
sides (`pad_mode`, reflect by default); the frames are the n_fft-long windows `hop_length` (n_fft // 4 by default)
apart; a window (given: 1-D of `win_length`; none and win_length < n_fft: ones of win_length centred in zeros)
multiplies each frame; each frame's real DFT follows, halved to n_fft // 2 + 1 frequencies when `onesided`,
scaled by 1 / sqrt(n_fft) when `normalized`. The result is real, its last axis (real, imaginary):
(n_freq, n_frames, 2) for a 1-D input, (batch, n_freq, n_frames, 2) for a 2-D one (stft_op.cpp's output shape,
which keeps a batch of one). `return_complex=True` is refused, as OneFlow 0.9 refuses it (no complex dtype).

Here the DFT is a product with the cos / sin matrix (registered ops: pad, unfold_tensor, mul, matmul, stack,
permute), so the transform is differentiable and runs on global tensors and in nn.Graph. Where OneFlow 0.9 refused a
given window shorter than n_fft ("not currently supported"), it is centred in zeros here, as its TODO and
PyTorch do.
"""
import numpy as np

from oneflow_compat._global import functional as F
from oneflow_compat._global import nn_functional as nnF
from oneflow_compat._global import nn_fold
from oneflow_compat._global.shape_extra import host_constant
from oneflow_compat._global.tensor import Tensor


def _constant(values, like):
    """Host values (the window, the DFT matrix) in like's dtype on its device, or broadcast on its placement."""
    return host_constant(values, like, like.dtype)


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",  # noqa: A002
         normalized=False, onesided=True, return_complex=False):
    if not isinstance(input, Tensor):
        raise TypeError("stft(): argument 'input' must be Tensor, not %s" % type(input).__name__)
    hop = int(n_fft) // 4 if hop_length is None else int(hop_length)
    win = int(n_fft) if win_length is None else int(win_length)
    n_fft = int(n_fft)
    if return_complex:
        raise RuntimeError("return_complex parameter is not supported at this time")
    if input.ndim not in (1, 2):
        raise RuntimeError("Expected a 1D or 2D tensor,but got %dD" % input.ndim)
    if not input.dtype.is_floating:
        raise RuntimeError("stft(): expected a floating input, got %r" % input.dtype)
    x = input if input.ndim == 2 else F.reshape(input, (1, input.shape[0]))
    if center:
        pad = n_fft // 2
        x = F.reshape(nnF.pad(F.reshape(x, (1,) + tuple(x.shape)), (pad, pad), mode=pad_mode),
                      (x.shape[0], x.shape[1] + 2 * pad))
    length = x.shape[1]
    if not 0 < n_fft <= length:
        raise RuntimeError("Expected 0 < n_fft < %d ,but got %d" % (length, n_fft))
    if hop <= 0:
        raise RuntimeError("Expected hop_length > 0, but got %d" % hop)
    if not 0 < win <= n_fft:
        raise RuntimeError("Expected 0 < win_length <=n_fft ,but got %d" % win)
    frames = nn_fold.unfold_tensor(x, 1, n_fft, hop)  # (batch, n_frames, n_fft)
    if window is not None:
        if not isinstance(window, Tensor) or window.ndim != 1 or window.shape[0] != win:
            shape = tuple(window.shape) if isinstance(window, Tensor) else window
            raise RuntimeError("Expected a 1D window tensor of size equal to win_length=%d, but got window with size "
                               "%s" % (win, shape))
        w = window
        if win < n_fft:
            left = (n_fft - win) // 2
            w = nnF.pad(F.reshape(window, (1, 1, win)), (left, n_fft - win - left), mode="constant", value=0)
            w = F.reshape(w, (n_fft,))
        frames = F.mul(frames, F.cast(w, frames.dtype) if w.dtype is not frames.dtype else w)
    elif win < n_fft:
        left = (n_fft - win) // 2
        ones = np.zeros(n_fft)
        ones[left:left + win] = 1.0
        frames = F.mul(frames, _constant(ones, frames))
    n_freq = n_fft // 2 + 1 if onesided else n_fft
    k = np.arange(n_freq)[None, :]
    t = np.arange(n_fft)[:, None]
    angle = 2.0 * np.pi * ((t * k) % n_fft) / n_fft  # (the product reduced mod n_fft: exact angles)
    scale = 1.0 / np.sqrt(n_fft) if normalized else 1.0
    real = F.matmul(frames, _constant(np.cos(angle) * scale, frames))
    imag = F.matmul(frames, _constant(-np.sin(angle) * scale, frames))
    out = F.permute(F.stack([real, imag], -1), 0, 2, 1, 3)  # (batch, n_freq, n_frames, 2)
    if input.ndim == 1:
        out = F.reshape(out, tuple(out.shape)[1:])
    return out
