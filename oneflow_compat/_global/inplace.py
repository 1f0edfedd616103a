"""In-place results: a tensor taking an op's output as its own value (`x.add_(y)`, `slice_update`, dropout's
`inplace`). Its own module so that functions below the Tensor methods (dropout, the nd functions) can use it."""


def rebind(self, result):
    """In-place op: storage updated in place when nothing records gradients (a local eager tensor's views and
    root see it: they share the storage), else the tensor takes the result (a view, or a root with views: their
    storage and history as `_global/views.py` says)."""
    if not self.is_lazy and result.is_lazy:
        # inside nn.Graph.build an eager tensor captured from outside (`x.add_(y)` on a free tensor) has no lazy
        # storage to update: the op's lazy output stands for the updated value and the eager tensor outside the
        # graph is left as it was (build is traced once; OneFlow's graph likewise does not write the free
        # eager tensor while tracing, nor applies eager autograd's leaf check there)
        return result
    if not self.is_lazy:  # inside nn.Graph.build an op's lazy output is no leaf (`out += identity` in ResNets)
        self._check_inplace()
    v, r = self._value, result._value
    same = (r.meta.shape == v.meta.shape and r.placement == v.placement and r.sbp == v.sbp)
    if result._node is None and same and not self.is_lazy:  # (a lazy tensor has no storage: it takes the result)
        for p, q in zip(v.pieces, r.pieces):
            p[...] = q
        return self
    if self._view_root is not None or self._views:  # views of local eager tensors: `_global/views.py`
        from oneflow_compat._global import views

        return views.rebind(self, result, same)
    self._value, self._placement, self._sbp = r, result._placement, result._sbp
    self._node, self._out_index, self.requires_grad_flag = result._node, result._out_index, \
        result.requires_grad_flag
    return self
