"""`nn.ModuleDict`, `nn.ParameterList` and `nn.ParameterDict` (OneFlow 0.9, `nn/utils/container.py`): containers
that register what they hold, so `parameters()`, `state_dict()`, `to_global()` and `nn.Graph` see it; they are not
called (`forward` raises), the user walks them. `Sequential` and `ModuleList` live in `modules.py`.
"""
import collections
import collections.abc
import operator

from oneflow_compat._global.modules import Module, Parameter


def _abs_index(idx, n):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError("index {} is out of range".format(idx))
    return str(idx + n if idx < 0 else idx)


def _pairs(items, what):
    """(key, value) pairs of a mapping or of an iterable of pairs, checked as OneFlow checks them."""
    if not isinstance(items, collections.abc.Iterable):
        raise TypeError("%s.update should be called with an iterable of key/value pairs, but got %s"
                        % (what, type(items).__name__))
    if isinstance(items, collections.abc.Mapping) or isinstance(items, (ModuleDict, ParameterDict)):
        return list(items.items())
    pairs = []
    for j, m in enumerate(items):
        if not isinstance(m, collections.abc.Iterable):
            raise TypeError("%s update sequence element #%d should be Iterable; is%s" % (what, j, type(m).__name__))
        if len(m) != 2:
            raise ValueError("%s update sequence element #%d has length %d; 2 is required" % (what, j, len(m)))
        pairs.append((m[0], m[1]))
    return pairs


class ModuleDict(Module):
    """Modules by name, registered as submodules in insertion order."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        for key, module in _pairs(modules, "ModuleDict"):
            self[key] = module

    def forward(self, *args, **kwargs):
        raise NotImplementedError()


def _parameter_line(key, p):
    size = "x".join(str(d) for d in p.size())
    device = " (GPU 0)" if p.is_cuda else ""
    return "  (%s): Parameter containing: [%s of size %s%s]" % (key, _public_class(type(p)), size, device)


def _public_class(cls):
    """A class as OneFlow prints it: nn.Parameter under its public name, `<class 'oneflow.nn.Parameter'>` (the
    implementation's own module path otherwise shows; a user's subclass prints as Python prints it)."""
    from oneflow_compat._global.modules import Parameter

    return "<class 'oneflow.nn.Parameter'>" if cls is Parameter else str(cls)


class ParameterList(Module):
    """Parameters in a list, registered as `0`, `1`, …"""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.extend(parameters)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._parameters.values())[idx])
        return self._parameters[_abs_index(idx, len(self))]

    def __setitem__(self, idx, param):
        self.register_parameter(_abs_index(idx, len(self)), param)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, parameter):
        self.register_parameter(str(len(self)), parameter)
        return self

    def extend(self, parameters):
        if not isinstance(parameters, collections.abc.Iterable):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(parameters).__name__)
        for p in list(parameters):
            self.append(p)
        return self

    def extra_repr(self):
        return "\n".join(_parameter_line(k, p) for k, p in self._parameters.items())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """Parameters by name. A plain dict given to the constructor or `update` is taken in sorted key order, an
    OrderedDict, ParameterDict or list of pairs in its own order (as OneFlow 0.9)."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, parameter):
        self.register_parameter(key, parameter)

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.keys())

    def __contains__(self, key):
        return key in self._parameters

    def clear(self):
        self._parameters.clear()

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def update(self, parameters):
        pairs = _pairs(parameters, "ParametersDict")
        if isinstance(parameters, collections.abc.Mapping) and \
                not isinstance(parameters, (collections.OrderedDict, ParameterDict)):
            pairs = sorted(pairs, key=lambda kv: kv[0])
        for key, p in pairs:
            self[key] = p

    def extra_repr(self):
        return "\n".join(_parameter_line(k, p) for k, p in self._parameters.items())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")


__all__ = ["ModuleDict", "ParameterList", "ParameterDict", "Parameter"]
