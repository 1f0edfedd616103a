"""OneFlow 0.9's explicit forms of `Tensor.to_global`: `Tensor.local_to_global` and `Tensor.global_to_global`
(docs/source/tensor.rst at v0.9.0; python/oneflow/nn/modules/global_cast.py `local_to_global_op`,
`global_to_global_op`). Each checks the kind of tensor it is given with OneFlow's messages, then is `to_global`:
local -> global needs both placement and sbp; global -> global keeps the placement or the sbp not given.
"""
from oneflow_compat._global import layouts
from oneflow_compat._global.tensor import Tensor


def local_to_global(self, placement=None, sbp=None, *, check_meta=True, copy=False):
    """A global tensor made of this rank's local tensor (every rank of the placement calls it)."""
    if not isinstance(self, Tensor):
        raise TypeError("local_to_global(): input must be a Tensor, got %s" % type(self).__name__)
    if not self.is_local:
        raise AssertionError("input must be a local tensor")
    if placement is None or sbp is None:
        raise ValueError("Converting a local tensor to global tensor must have placement and sbp parameters.")
    return layouts.to_global(self, placement, sbp, None, check_meta)


def global_to_global(self, placement=None, sbp=None, *, grad_sbp=None, check_meta=False, copy=False):
    """The global tensor with another placement and / or sbp (boxing inserted); the gradient takes grad_sbp."""
    if not isinstance(self, Tensor):
        raise TypeError("global_to_global(): input must be a Tensor, got %s" % type(self).__name__)
    if not self.is_global:
        raise AssertionError("input must be a global tensor")
    return layouts.to_global(self, placement, sbp, grad_sbp, check_meta)
