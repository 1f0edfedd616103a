"""`flow.inference_mode` / `flow.autograd.inference_mode` (OneFlow v0.9.0 `python/oneflow/autograd/
autograd_mode.py`): a context manager and decorator (instantiated with parentheses) that turns gradient recording
off while `mode` is True (the default) and on while it is False, per thread, restoring the previous mode on exit.
OneFlow's inference mode is this grad-mode switch alone (its AutoGradMode guard), so tensors made inside it can
be used by autograd later, unlike PyTorch's inference tensors."""
from oneflow_compat.runtime.autograd import _Grad


class inference_mode(_Grad):  # noqa: N801 - OneFlow's name
    """`with flow.inference_mode():` / `@flow.inference_mode()`: ops record no gradient (mode=False: they do)."""

    def __init__(self, mode=True):
        if not isinstance(mode, bool):
            raise TypeError("inference_mode(): mode must be a bool, got %s (use @flow.inference_mode() with "
                            "parentheses as a decorator)" % type(mode).__name__)
        super().__init__(not mode)
