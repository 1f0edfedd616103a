"""`flow.nn.Module`, `flow.nn.Parameter` and the layers built on them (`Linear`, `ReLU`, `Flatten`, `Sequential`,
`ModuleList`, `Identity`, `Dropout`), as OneFlow 0.5–0.9 has them.

A module registers what is assigned to it: a `Parameter` becomes a parameter, a `Module` a submodule,
`register_buffer` a buffer; `parameters()`, `state_dict()` and friends walk them in assignment order, named by
attribute path (`m_stage0.linear0.weight`).

`to_global(placement, sbp)` (0.5: `to_consistent`) converts every parameter and buffer in place on the module,
as OneFlow's `Module._apply` does: a global -> global conversion keeps the Parameter object (its data is
replaced), a local -> global conversion REPLACES it by a new Parameter — so an optimizer must be created after
the conversion (seed 004 does). Tied parameters stay tied.
"""
import collections
import collections.abc
import itertools
import math

from oneflow_compat.framework import client_mode
from oneflow_compat.runtime import autograd
from oneflow_compat._global import dropout as dropout_fn
from oneflow_compat._global import functional, lazy, nn_init
from oneflow_compat._global import state_values
from oneflow_compat._global.tensor import Tensor


class Parameter(Tensor):
    """A tensor a module owns: a leaf that requires a gradient (unless told otherwise), sharing `data`'s storage
    and keeping its layout (a global tensor stays global on its placement and SBP)."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            from oneflow_compat._global import creation

            data = creation.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError("Parameter: data must be a flow.Tensor, got %s" % type(data).__name__)
        self._value = data._value
        self._placement = data._placement
        self._sbp = data._sbp
        self._device = data._device
        self._node = None
        self._acc_node = None
        self._out_index = 0
        self._grad = None
        self.requires_grad_flag = False
        # OneFlow 0.9 wraps `data->detach()` (core/framework/tensor.h:447-460 @ v0.9.0, Parameter::MakeTensor): a
        # local view keeps its storage, strides and offset, so a Parameter of `x.transpose(0, 1)` is not contiguous
        # (nn.Graph makes it contiguous in place before its first build: graph.py)
        if data._placement is None and data._view_root is not None:
            from oneflow_compat._global import views

            if views.applicable(data):
                views.register(views.root_of(data), self, views.layout_of(data), differentiable=False)
        # OneFlow 0.9 (core/framework/tensor.h, Parameter's constructor) ignores the failed check of a non-floating
        # tensor's set_requires_grad: an integer Parameter is made, and does not require a gradient
        if requires_grad and data.dtype.is_floating:
            self.requires_grad_(True)

    # (a Parameter prints as the tensor it is, as OneFlow 0.9's C++ Parameter does: no "Parameter containing:")


class _IncompatibleKeys(collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class of every layer and model (see the module docstring)."""

    def __init__(self):
        client_mode.use(client_mode.GLOBAL, "creating a flow.nn.Module (%s)" % type(self).__name__)
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", collections.OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", collections.OrderedDict())
        object.__setattr__(self, "_forward_hooks", collections.OrderedDict())

    # --- calling -------------------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError('Module [%s] is missing the required "forward" function' % type(self).__name__)

    def __call__(self, *args, **kwargs):
        if lazy.tracer_active():  # inside nn.Graph.build: the graph knows this module's path and stage
            return lazy.module_call(self, lambda a, k: self._call(*a, **k), args, kwargs)
        return self._call(*args, **kwargs)

    def _call(self, *args, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            changed = hook(self, args)
            if changed is not None:
                args = changed if isinstance(changed, tuple) else (changed,)
        result = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            changed = hook(self, args, result)
            if changed is not None:
                result = changed
        return result

    def register_forward_pre_hook(self, hook):
        return _HookHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook):
        return _HookHandle(self._forward_hooks, hook)

    # --- registration --------------------------------------------------------------------------------------
    def _check_initialized(self, what):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign %s before Module.__init__() call" % what)

    def register_parameter(self, name, param):
        self._check_initialized("parameters")
        self._check_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError("cannot assign '%s' object to parameter '%s' (oneflow.nn.Parameter or None required)"
                            % (_type_name(param), name))
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        self._check_initialized("buffers")
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError("cannot assign '%s' object to buffer '%s' (oneflow.Tensor or None required)"
                            % (_type_name(tensor), name))
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError("%s is not a Module subclass" % _type_name(module))
        self._check_name(name, "module", self._modules)
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, name, kind, own):
        if not isinstance(name, str):
            raise TypeError("%s name should be a string. Got %s" % (kind, _type_name(name)))
        if "." in name:
            raise KeyError('%s name can\'t contain ".", got: %s' % (kind, name))
        if name == "":
            raise KeyError('%s name can\'t be empty string ""' % kind)
        if name in self.__dict__ and name not in own:
            raise KeyError("attribute '%s' already exists" % name)

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            self._check_initialized("parameters")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError("cannot assign '%s' as parameter '%s' (oneflow.nn.Parameter or None expected)"
                                % (_type_name(value), name))
            params[name] = None
        elif isinstance(value, Module):
            self._check_initialized("module")
            self._forget(name)
            self._modules[name] = value
        elif self.__dict__.get("_modules") is not None and name in self._modules:
            if value is not None:
                raise TypeError("cannot assign '%s' as child module '%s' (oneflow.nn.Module or None expected)"
                                % (_type_name(value), name))
            self._modules[name] = None
        elif self.__dict__.get("_buffers") is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError("cannot assign '%s' as buffer '%s' (oneflow.Tensor or None expected)"
                                % (_type_name(value), name))
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name):
        self.__dict__.pop(name, None)
        for table in ("_parameters", "_buffers", "_modules"):
            self.__dict__[table].pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name):
        # only called when normal lookup fails: parameters, buffers and submodules live in their tables
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            entries = d.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def __delattr__(self, name):
        for table in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                del entries[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = set(super().__dir__())
        for table in ("_parameters", "_buffers", "_modules"):
            keys.update(self.__dict__.get(table, ()))
        return sorted(keys)

    # --- walking -------------------------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True):
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield (module_prefix + ("." if module_prefix else "") + name, value)

    def named_parameters(self, prefix="", recurse=True):
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo=None, prefix=""):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # --- modes and gradients -------------------------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        object.__setattr__(self, "training", mode)
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=False):
        for p in self.parameters():
            p._zero_grad_(set_to_none)  # (a global gradient's broadcast becomes partial_sum, as OneFlow 0.9)

    # --- state ---------------------------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param  # OneFlow 0.9 keeps the Parameter itself (keep_vars or not)
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """{attribute path: tensor} of every parameter and persistent buffer (detached, sharing storage)."""
        if destination is None:
            destination = collections.OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict=True):
        """Copies the values of `state_dict` into this module's parameters and buffers, each converted to the
        tensor's own layout (a local value into a global parameter is taken from the placement's first rank, as
        `to_global(..., broadcast)` does). Every value is checked before anything is copied, so a failed load
        changes nothing."""
        if not isinstance(state_dict, collections.abc.Mapping):
            raise TypeError("Expected state_dict to be dict-like, got %s." % type(state_dict).__name__)
        own = collections.OrderedDict()
        for module_prefix, module in self.named_modules():
            base = module_prefix + ("." if module_prefix else "")
            for name, p in module._parameters.items():
                if p is not None:
                    own[base + name] = p
            for name, b in module._buffers.items():
                if b is not None and name not in module._non_persistent_buffers_set:
                    own[base + name] = b
        # entries a module keeps beside its tensors (flow.one_embedding's snapshot name): the module checks them
        # with the tensors and loads them after (`_extra_state_keys(prefix)`, `_check_extra_state`,
        # `_load_extra_state`)
        extra = []
        for module_prefix, module in self.named_modules():
            keys = getattr(module, "_extra_state_keys", None)
            if keys is not None:
                base = module_prefix + ("." if module_prefix else "")
                extra.append((module, base, keys(base)))
        claimed = {k for _, _, keys in extra for k in keys}
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own and k not in claimed]
        errors = []
        for module, base, _ in extra:
            problem = module._check_extra_state(state_dict, base)
            if problem is not None:
                errors.append(problem)
        for key, target in own.items():
            if key in state_dict:
                problem = state_values.check(state_dict[key], target)
                if problem is not None:
                    errors.append("size mismatch for %s: %s" % (key, problem))
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: %s. " % ", ".join('"%s"' % k for k in unexpected))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: %s. " % ", ".join('"%s"' % k for k in missing))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for %s:\n\t%s"
                               % (type(self).__name__, "\n\t".join(errors)))
        with autograd.no_grad():
            for key, target in own.items():
                if key in state_dict:
                    state_values.copy_into(target, state_dict[key])
        for module, base, _ in extra:
            module._load_extra_state(state_dict, base)
        return _IncompatibleKeys(missing, unexpected)

    # --- conversions ---------------------------------------------------------------------------------------
    def _apply(self, fn, applied=None):
        """`fn` applied to every parameter (and its gradient) and buffer, in place on the modules: a result of
        the same kind (local/global) is assigned to the Parameter's data, one of the other kind replaces the
        Parameter. Each tensor is converted once (`applied`), so shared parameters stay shared."""
        if applied is None:
            applied = {}
        for module in self.children():
            module._apply(fn, applied)
        for key, param in self._parameters.items():
            if param is None:
                continue
            if id(param) in applied:
                self._parameters[key] = applied[id(param)][1]
                continue
            with autograd.no_grad():
                converted = fn(param)
                grad = None if param.grad is None else fn(param.grad)
            if converted.is_local == param.is_local:
                param.data = converted
                new = param
            else:
                new = Parameter(converted, param.requires_grad)
                self._parameters[key] = new
                # an optimizer created before this conversion still holds `param`: it will update nothing the
                # module uses (OneFlow 0.9 replaces the Parameter too, silently); Optimizer.step() warns
                param._replaced_by_conversion = "parameter '%s' of %s" % (key, type(self).__name__)
            if grad is not None:
                new.grad = grad.detach()
            applied[id(param)] = (param, new)  # the old object stays alive, so its id is not reused meanwhile
        for key, buf in self._buffers.items():
            if buf is None:
                continue
            if id(buf) not in applied:
                with autograd.no_grad():
                    applied[id(buf)] = (buf, fn(buf))
            self._buffers[key] = applied[id(buf)][1]
        return self

    def to_global(self, placement=None, sbp=None):
        """Every parameter and buffer to_global(placement, sbp), in place (see the module docstring)."""
        return self._apply(lambda t: t.to_global(placement=placement, sbp=sbp))

    def to_consistent(self, placement=None, sbp=None):
        """OneFlow 0.5–0.6's name of `to_global`."""
        return self.to_global(placement=placement, sbp=sbp)

    def to(self, *args, **kwargs):
        """`to(device)`, `to(dtype)`, `to(device, dtype)` or `to(tensor)` (its device and dtype) of every local
        parameter and buffer, as OneFlow 0.9's Module.to (nn/modules/module.py, v0.9.0): a floating dtype only,
        which only the floating tensors take; integral ones keep theirs (and move to the device)."""
        from oneflow_compat.ir import dtypes
        from oneflow_compat._global.tensor import Tensor

        if len(args) == 1 and not kwargs and isinstance(args[0], type) and args[0].__name__ == "GraphModule":
            block = lazy.block_of(self)  # inside build, `self.to(nn.graph.GraphModule)` of a registered module
            if block is None:
                raise ValueError("Unsupported parameters in module.to: %s (only a module of an nn.Graph, inside its "
                                 "build, has a GraphModule)" % (args[0],))
            return block.to(args[0])
        device = dtype = None
        if len(args) + len(kwargs) == 2:
            device = kwargs.pop("device", None) or args[0]
            dtype = kwargs.pop("dtype", None) or args[1]
        elif len(args) + len(kwargs) == 1:
            if args:
                arg = args[0]
                if isinstance(arg, Tensor):
                    device, dtype = arg.device, arg.dtype
                elif isinstance(arg, dtypes.DType):
                    dtype = arg
                elif isinstance(arg, (str, int)) or type(arg).__name__ == "device":
                    device = arg
                else:
                    raise ValueError("Unsupported parameters in module.to: %s" % (arg,))
            else:
                device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
                tensor = kwargs.pop("tensor", None)
                if tensor is not None:
                    device, dtype = tensor.device, tensor.dtype
        else:
            raise ValueError("Unsupported parameters in module.to: %s and %s" % (args, kwargs))
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point dtypes, but got desired dtype=%s" % (dtype,))

        def convert(t):
            return t.to(device, dtype if t.is_floating_point() else None)

        return self._apply(convert)

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def cpu(self):
        return self.to("cpu")

    # float / double / half: the floating parameters and buffers only (OneFlow 0.9's Module)
    def float(self):
        from oneflow_compat.ir import dtypes

        return self._apply(lambda t: t.to(dtypes.float32) if t.is_floating_point() else t)

    def double(self):
        from oneflow_compat.ir import dtypes

        return self._apply(lambda t: t.to(dtypes.float64) if t.is_floating_point() else t)

    def half(self):
        from oneflow_compat.ir import dtypes

        return self._apply(lambda t: t.to(dtypes.float16) if t.is_floating_point() else t)

    def to_local(self):
        """Every global parameter and buffer replaced by this rank's local piece (OneFlow 0.9)."""
        return self._apply(lambda t: t.to_local() if t.is_global else t)

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        self.__dict__.update(state)

    # --- printing ------------------------------------------------------------------------------------------
    def extra_repr(self):
        return ""

    def _shallow_repr(self):
        """OneFlow 0.9's Module._shallow_repr (nn/modules/module.py:1360-1373@v0.9.0): `Name(extra_repr)`, a
        multi-line extra_repr indented (what a GraphModule's repr and the unregistered-module warning print)."""
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        text = self._get_name() + "("
        if len(lines) == 1:
            text += lines[0]
        elif lines:
            text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, module in self._modules.items():
            lines.append("(" + name + "): " + _addindent(repr(module), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


class _HookHandle:
    _ids = itertools.count()

    def __init__(self, table, hook):
        self.table, self.id = table, next(self._ids)
        table[self.id] = hook

    def remove(self):
        self.table.pop(self.id, None)


def _type_name(x):
    t = type(x)
    return "oneflow.Tensor" if isinstance(x, Tensor) else "%s.%s" % (t.__module__, t.__qualname__)


# --- containers ---------------------------------------------------------------------------------------------
class Sequential(Module):
    """Modules called one after the other: `Sequential(m0, m1, …)` or `Sequential(OrderedDict(name=m, …))`."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], collections.OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(collections.OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self))]

    def __setitem__(self, idx, module):
        key = list(self._modules.keys())[_index(idx, len(self))]
        self.add_module(key, module)

    def __delitem__(self, idx):
        keys = list(self._modules.keys())
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(self))]]):
            del self._modules[key]

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input):  # noqa: A002
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules registered as submodules `0`, `1`, …"""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self)))]

    def __setitem__(self, idx, module):
        self.add_module(str(_index(idx, len(self))), module)

    def __delitem__(self, idx):
        keys = list(self._modules.keys())
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(self))]]):
            del self._modules[key]
        # the remaining modules are renumbered 0, 1, … (as OneFlow's ListContainer does)
        object.__setattr__(self, "_modules", collections.OrderedDict(
            (str(i), m) for i, m in enumerate(self._modules.values())))

    def __iadd__(self, modules):
        return self.extend(modules)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def insert(self, index, module):
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        if not isinstance(modules, collections.abc.Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        for module in list(modules):
            self.append(module)
        return self

    def forward(self, *args, **kwargs):
        raise NotImplementedError()


def _index(idx, n):
    idx = int(idx)
    if not -n <= idx < n:
        raise IndexError("index %d is out of range" % idx)
    return idx % n


# --- layers -------------------------------------------------------------------------------------------------
class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):  # noqa: A002
        return input


class Linear(Module):
    """`y = x·Wᵀ + b`, W of shape (out_features, in_features). Initialised as OneFlow (and PyTorch) do:
    W ~ kaiming_uniform(a=√5) = U(±1/√in_features), b ~ U(±1/√in_features), drawn from this rank's local
    generator (the module is created locally; `to_global(..., broadcast)` then takes the first rank's values)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        from oneflow_compat._global import creation

        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = Parameter(creation.empty(self.out_features, self.in_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(creation.empty(self.out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        nn_init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            nn_init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        # OneFlow 0.9's Linear.forward (nn/modules/linear.py): matmul, then `res += self.bias`, an in-place add that
        # promotes the bias to the result's dtype; under flow.autocast("cuda") the matmul computes in float16, so
        # the layer's output stays float16 there (autocast_mode.py)
        res = functional.matmul(x, self.weight, transpose_b=True)
        if self.bias is None:
            return res
        bias = self.bias
        if bias.dtype is not res.dtype and res.dtype.is_floating:
            bias = functional.cast(bias, res.dtype)
        return functional.add(res, bias)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, bias=%s" % (self.in_features, self.out_features,
                                                             self.bias is not None)


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return functional.relu(x)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Flatten(Module):
    """Merges dimensions start_dim..end_dim (default: all but the first)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return functional.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self):
        return "start_dim=%d, end_dim=%d" % (self.start_dim, self.end_dim)


class Dropout(Module):
    """In training mode, zeroes each element with probability p and scales the rest by 1/(1−p); the identity in
    eval mode. The mask of a global tensor depends only on the global generator (not on the layout)."""

    def __init__(self, p=0.5, inplace=False, generator=None):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError("dropout probability has to be between 0 and 1, but got %r" % (p,))
        self.p, self.inplace, self.generator = float(p), inplace, generator

    def forward(self, x, addend=None):
        return dropout_fn.dropout(x, self.p, self.training, self.inplace, self.generator, addend)

    def extra_repr(self):
        return "p=%s, inplace=%s" % (self.p, self.inplace)
