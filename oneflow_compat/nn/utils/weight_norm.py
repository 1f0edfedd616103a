"""`nn.utils.weight_norm` / `remove_weight_norm` (OneFlow 0.9, `nn/utils/weight_norm.py`): a parameter `name` is
re-expressed as `name_g * name_v / ||name_v||` (norm over every dimension but `dim`), recomputed before each
forward by a pre-hook; `remove_weight_norm` folds it back into one parameter."""
from oneflow_compat.runtime import autograd
from oneflow_compat._global import functional as F
from oneflow_compat._global.modules import Parameter


def _norm_except_dim(v, dim):
    # OneFlow 0.9 (nn/utils/weight_norm.py _norm_except_dim): dim -1 (or None) is the norm of the whole tensor,
    # a 0-dim g, as torch; another negative dim counts from the end
    if dim is None or dim == -1:
        return F.sqrt(F.sum(F.square(v)))
    if not -v.ndim <= dim <= v.ndim - 1:
        raise AssertionError("dim out of range")
    dim = dim % v.ndim
    axes = [i for i in range(v.ndim) if i != dim]
    return F.sqrt(F.sum(F.square(v), axes, keepdim=True))


class WeightNorm:
    def __init__(self, name, dim):
        self.name, self.dim = name, dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return F.mul(v, F.div(g, _norm_except_dim(v, self.dim)))

    @staticmethod
    def apply(module, name, dim):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError("Cannot register two weight_norm hooks on the same parameter {}".format(name))
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        with autograd.no_grad():
            g = _norm_except_dim(weight.detach(), dim).clone()
            v = weight.detach().clone()
        module.register_parameter(name + "_g", Parameter(g))
        module.register_parameter(name + "_v", Parameter(v))
        object.__setattr__(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module).detach()
        if self.name in module.__dict__:
            object.__delattr__(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        module.register_parameter(self.name, Parameter(weight))

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError("weight_norm of '{}' not found in {}".format(name, module))
