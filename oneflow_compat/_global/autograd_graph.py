"""`oneflow.autograd.graph` (OneFlow 0.9, python/oneflow/autograd/graph.py): `saved_tensors_hooks(pack_hook,
unpack_hook)`, the context in which every op recorded for backward hands the tensors it saves to `pack_hook` and
keeps what that returns instead; backward (`Tensor.backward`, `autograd.grad`) gives each kept object to
`unpack_hook`, which must return a tensor equal to the saved one (same shape and dtype: checked, a RuntimeError
names the node otherwise). Only the innermost pair applies when they nest, as OneFlow's.

What an op saves here: its input tensors (this implementation's gradient rules read the forward's inputs, and its
outputs, which stay with the node unhooked). So `a * b` packs `a` and `b`, as OneFlow's multiply does; an op on one
tensor packs that tensor even where OneFlow's rule needs only its output (relu, exp). First-order backward computes
from the unpacked tensors; the node keeps its own reference to the inputs too (higher-order gradients,
`create_graph=True`, rebuild the history from those), so the hooks change no memory use here.
"""
from oneflow_compat.runtime import autograd as _autograd

__all__ = ["saved_tensors_hooks"]


class saved_tensors_hooks:  # noqa: N801 - OneFlow's name
    def __init__(self, pack_hook, unpack_hook):
        for what, hook in (("pack_hook", pack_hook), ("unpack_hook", unpack_hook)):
            if not callable(hook):
                raise TypeError("saved_tensors_hooks: %s must be callable, got %s" % (what, type(hook).__name__))
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _autograd.SAVED_TENSORS_HOOKS.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *args):
        _autograd.SAVED_TENSORS_HOOKS.pop()
