"""`flow.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)` (OneFlow 0.9's
`python/oneflow/amp/autocast_mode.py`; also `flow.amp.autocast`, and as a decorator) with OneFlow 0.9's rules.

* CPU autocast is not supported ("Disabling autocast", a warning), nor a scope opened inside an nn.Graph build
  (lazy mode). A scope opened eagerly stays on while a graph traces its build in it: the build's ops are cast as
  eager ones are (0.9's TensorAutoCastProcessor checks the autocast state alone, lazy ops included:
  functional/tensor_processor.cpp:182-243 @ v0.9.0; test/tensor/test_autocast.py test_autocast_graph).
* A scope sets, per thread, whether autocast is on, its device type and its dtype (the scope's dtype becomes the
  GPU dtype inside it) and restores the previous values when it ends (0.9's `AutoCastMode`,
  `oneflow/api/python/framework/autocast.cpp`).
* Inside an enabled scope every eager op goes through `cast_inputs` (`dispatch.py`), 0.9's
  `TensorAutoCastProcessor` (`oneflow/core/functional/tensor_processor.cpp` @ v0.9.0), with the op's colour from the
  auto-mixed-precision lists (`oneflow/core/job_rewriter/auto_mixed_precision_lists.cpp` @ v0.9.0):
  - a white-list op (matmul, conv2d, prelu, fused matmuls, ...) casts its floating inputs to the autocast dtype
    (float16 by default) and computes in it;
  - a gray- or clear-list op (add, mul, softmax, layer_norm, relu, reshape, pools, ...) computes in the autocast
    dtype only where every floating input already has it;
  - every other op (the black list: OneFlow's default for an op on no list), and a gray/clear op given another
    floating dtype, computes in float32 (float64 where an input is float64): its float16 inputs are cast up.
  Only inputs that run on CUDA are cast (0.9 compares each tensor's device type with the scope's): "cuda" tensors
  and placements where CUDA is usable. CPU tensors — and "cuda" ones where no GPU is usable, which run on CPU
  devices here (backend/devices.py) — are left alone, as OneFlow leaves CPU ops alone. The casts are ordinary
  differentiable `cast` ops, so the gradients reach float32 parameters in float32.
* `get_autocast_cpu_dtype` / `set_autocast_cpu_dtype` keep the CPU scope's dtype (bfloat16 by default, 0.9's
  core/framework/autocast.cpp; flow.bfloat16 is float32 storage holding bfloat16 numbers here, ir/dtypes.py).

`cache_enabled` is kept and reported; nothing is cached (0.9's `clear_cache` is empty too).
"""
import functools
import threading
import warnings

from oneflow_compat.backend import devices
from oneflow_compat.ir import dtypes
from oneflow_compat._global import lazy
from oneflow_compat.ops import amp_lists

__all__ = ["autocast", "autocast_decorator", "is_autocast_enabled", "set_autocast_enabled", "get_autocast_gpu_dtype",
           "set_autocast_gpu_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
           "clear_autocast_cache", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype"]


class _State(threading.local):
    """0.9's thread-local autocast state (core/framework/autocast.cpp): its defaults."""

    def __init__(self):
        self.enabled = False
        self.device = "cuda"
        self.dtype = dtypes.float16  # the dtype ops are cast to (the open scope's fast dtype)
        self.gpu_dtype = dtypes.float16
        self.cpu_dtype = dtypes.bfloat16
        self.cache_enabled = True

    def snapshot(self):
        return (self.enabled, self.device, self.dtype, self.gpu_dtype, self.cpu_dtype, self.cache_enabled)

    def restore(self, saved):
        (self.enabled, self.device, self.dtype, self.gpu_dtype, self.cpu_dtype, self.cache_enabled) = saved


STATE = _State()  # `dispatch.py` reads `STATE.enabled` on every eager op


def is_autocast_enabled():
    return STATE.enabled


def set_autocast_enabled(enabled):
    STATE.enabled = bool(enabled)


def get_autocast_gpu_dtype():
    return STATE.gpu_dtype


def set_autocast_gpu_dtype(dtype):
    STATE.gpu_dtype = dtype


def get_autocast_cpu_dtype():
    return STATE.cpu_dtype


def set_autocast_cpu_dtype(dtype):
    STATE.cpu_dtype = dtype


def is_autocast_cache_enabled():
    return STATE.cache_enabled


def set_autocast_cache_enabled(enabled):
    STATE.cache_enabled = bool(enabled)


def clear_autocast_cache():
    """Nothing is cached: every op computes in its inputs' dtype."""


def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)

    return decorate_autocast


class autocast:  # noqa: N801 - OneFlow's name
    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if device_type not in ("cuda", "cpu"):
            raise RuntimeError("User specified autocast device_type must be 'cuda' or 'cpu'")
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else (get_autocast_gpu_dtype() if device_type == "cuda"
                                                           else get_autocast_cpu_dtype())
        self.cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if device_type == "cpu":
            warnings.warn("CPU autocast is not supported currently. Disabling autocast.")
            enabled = False
        if lazy.tracer_active():
            warnings.warn("Autocast is not supported for lazy mode. Disabling autocast.")
            enabled = False
        self.enabled = enabled
        self._saved = []  # the state each (possibly nested, re-entered) use of this scope replaced

    def __enter__(self):
        self._saved.append(STATE.snapshot())
        STATE.enabled = bool(self.enabled)
        STATE.cache_enabled = bool(self.cache_enabled)
        STATE.device, STATE.dtype = self.device, self.fast_dtype
        if self.device == "cpu":
            STATE.cpu_dtype = self.fast_dtype
        else:
            STATE.gpu_dtype = self.fast_dtype
        return self

    def __exit__(self, *exc):
        STATE.restore(self._saved.pop())
        return False

    def __call__(self, func):
        return autocast_decorator(self, func)


# --- the processor: which inputs an op casts, and to what ---------------------------------------------------------
# the colours and the no-cast inputs are OneFlow 0.9's lists, kept once in ops/amp_lists.py (nn.Graph's AMP pass,
# passes/amp.py, reads the same)
_WHITE, _GRAY, _CLEAR, _BLACK = amp_lists.WHITE, amp_lists.GRAY, amp_lists.CLEAR, amp_lists.BLACK


def color(op_type):
    """The autocast colour of this project's op `op_type`: 'white', 'gray', 'clear' or 'black'."""
    return amp_lists.color(op_type)


def _on_cuda(t):
    """Whether tensor `t` runs on CUDA: a "cuda" tensor or placement, where CUDA is usable."""
    return t.is_cuda


def cast_inputs(op_type, inputs, cast):
    """The inputs op `op_type` computes with inside an enabled autocast scope (see the module docstring): `inputs`
    itself where nothing changes, else a new list with some inputs replaced by `cast(tensor, dtype)`. `cast` runs
    with autocast disabled (0.9 disables it around its own casts)."""
    on = [_on_cuda(t) for t in inputs]
    if not any(on) or not devices.cuda_usable():  # nothing runs on CUDA: 0.9 casts only the device type's tensors
        return inputs
    kind = color(op_type)
    fast = STATE.dtype
    no_cast = amp_lists.no_cast_inputs(op_type)
    if kind == _BLACK:
        eligible = False
    elif kind == _WHITE:
        eligible = True
    else:  # gray, clear: only where every castable floating input already has the autocast dtype
        eligible = all(not t.dtype.is_floating or t.dtype is fast
                       for i, t in enumerate(inputs) if i not in no_cast)
    if eligible:
        want = [fast if on[i] and i not in no_cast and t.dtype.is_floating and t.dtype is not fast else None
                for i, t in enumerate(inputs)]
    else:  # float32, or float64 where an input is float64 (0.9: promoteTypes(common dtype, float32))
        promoted = dtypes.float64 if any(t.dtype is dtypes.float64 for t in inputs) else dtypes.float32
        want = [promoted if on[i] and t.dtype.is_floating and t.dtype is not promoted else None
                for i, t in enumerate(inputs)]
    if not any(w is not None for w in want):
        return inputs
    STATE.enabled = False
    try:
        return [t if w is None else cast(t, w) for t, w in zip(inputs, want)]
    finally:
        STATE.enabled = True
