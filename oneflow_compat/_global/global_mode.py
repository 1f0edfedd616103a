"""`flow.utils.global_view.global_mode(enabled, placement, sbp)` (OneFlow 0.9): a scope in which the source ops —
`flow.tensor`, `zeros`, `ones`, `full`, `empty`, `arange`, `rand`, `randn`, `randint`, `randperm`, the ones
OneFlow's functors check (array_functor.cpp, math_functor.cpp, random_functor.cpp, tensor_api.cpp) — make global
tensors on the scope's placement and SBP (with the device type a call names, OneFlow's
GetGlobalParallelDescFromDevice), a global tensor's `.device` is its placement's device type, and `.to(device)`
takes a device object. `global_mode(False)` turns it off within an enclosing scope. Per thread, as OneFlow's."""
import threading

__all__ = ["global_mode", "current_global_mode"]

_STATE = threading.local()


def _stack():
    stack = getattr(_STATE, "stack", None)
    if stack is None:
        stack = _STATE.stack = [(False, None, ())]
    return stack


class global_mode:  # noqa: N801 - OneFlow's name
    def __init__(self, enabled, placement=None, sbp=None):
        if enabled:
            assert placement is not None and sbp is not None, \
                "Both placement and sbp are required if the global mode is enabled."
            sbp = tuple(sbp) if isinstance(sbp, (list, tuple)) else (sbp,)
        self._state = (bool(enabled), placement if enabled else None, sbp if enabled else ())

    def __enter__(self):
        _stack().append(self._state)
        return self

    def __exit__(self, *exc):
        _stack().pop()
        return False


class current_global_mode:  # noqa: N801 - OneFlow's name
    """The innermost scope's state: `is_enabled`, `placement`, `sbp` (a tuple of SBPs)."""

    def __init__(self):
        self._enabled, self._placement, self._sbp = _stack()[-1]

    @property
    def is_enabled(self):
        return self._enabled

    @property
    def placement(self):
        return self._placement

    @property
    def sbp(self):
        return self._sbp


def enabled():
    return _stack()[-1][0]
