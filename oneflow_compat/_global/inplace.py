"""In-place results: a tensor taking an op's output as its own value (`x.add_(y)`, `slice_update`, dropout's
`inplace`). Its own module so that functions below the Tensor methods (dropout, the nd functions) can use it."""
from oneflow_compat._global import device_keys


def rebind(self, result):
    """In-place op: storage updated in place when nothing records gradients (a local eager tensor's views and
    root see it: they share the storage), else the tensor takes the result (a view, or a root with views: their
    storage and history as `_global/views.py` says)."""
    if not self.is_lazy and result.is_lazy:
        # inside nn.Graph.build an eager tensor captured from outside (`self.buf.add_(1)`, `x.mul_(2)` on a free
        # tensor) is not written: OneFlow 0.9's lazy interpreter records the in-place op's output as the tensor's
        # new name (TensorNameScope::Record, core/framework/op_interpreter/lazy_op_interpreter.cpp), so later
        # reads in build see the new value, while no op of the job assigns its variable (nn/graph/graph.py has
        # no write-back): after a call the eager tensor holds what it held. No eager leaf check there either.
        from oneflow_compat._global import lazy

        lazy.rename_captured(self, result)
        return self
    if not self.is_lazy:  # inside nn.Graph.build an op's lazy output is no leaf (`out += identity` in ResNets)
        self._check_inplace()
    v, r = self._value, result._value
    same = (r.meta.shape == v.meta.shape and r.placement == v.placement and r.sbp == v.sbp)
    if result._node is None and same and not self.is_lazy:  # (a lazy tensor has no storage: it takes the result)
        with device_keys.of(self):  # (a "cuda:K" tensor: on its GPU)
            for p, q in zip(v.pieces, r.pieces):
                p[...] = q
        if getattr(v, "zeroed", False):  # (a gradient zero_grad() zeroed holds zeros no more: grad_zeroing.py)
            v.zeroed = False
        return self
    if self._view_root is not None or self._views:  # views of local eager tensors: `_global/views.py`
        from oneflow_compat._global import views

        with device_keys.of(self):  # (a "cuda:K" tensor: on its GPU)
            return views.rebind(self, result, same)
    self._value, self._placement, self._sbp = r, result._placement, result._sbp
    self._node, self._out_index, self.requires_grad_flag = result._node, result._out_index, \
        result.requires_grad_flag
    return self
