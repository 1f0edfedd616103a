"""The base of `flow.optim` optimizers: parameter groups, per-parameter state, `zero_grad`, `state_dict`.

An eager `step()` updates each parameter in place on THIS rank's piece, with the same kernels the legacy
optimizers use (`kernels/optim.py`): a parameter's gradient has already been boxed to the parameter's own
placement and SBP by the backward pass (a data-parallel gradient is all-reduced), and its state tensors (momentum,
Adam moments) are laid out like the parameter, so every piece updates independently and ranks outside a
placement have nothing to do. This is what OneFlow's eager optimizers do on global tensors.
"""
import collections.abc
import collections

from oneflow_compat.backend import devices
from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import bfloat16 as bf16_k
from oneflow_compat.runtime import global_eager
from oneflow_compat._global import device_keys
from oneflow_compat._global.tensor import Tensor


class ParamGroup(dict):
    """One parameter group: its options (`lr`, `momentum`, …) and, under "params", its parameters (OneFlow's
    `ParamGroup`; also reachable as `.parameters`)."""

    @property
    def parameters(self):
        return self["params"]

    @property
    def options(self):
        return {k: v for k, v in self.items() if k != "params"}

    def __repr__(self):
        # OneFlow 0.9's ParamGroup.__repr__ (optim/optimizer.py): the options, then "params" last
        shown = self.options
        shown["params"] = self["params"]
        return repr(shown)


class _State:
    """Per-parameter state, keyed by the parameter object itself (`optimizer.state[param]`)."""

    def __init__(self):
        self._entries = {}

    def __getitem__(self, param):
        return self._entries[id(param)][1]

    def __setitem__(self, param, value):
        self._entries[id(param)] = (param, value)

    def __contains__(self, param):
        return id(param) in self._entries

    def get(self, param, default=None):
        entry = self._entries.get(id(param))
        return default if entry is None else entry[1]

    def setdefault(self, param, default):
        if param not in self:
            self[param] = default
        return self[param]

    def items(self):
        return [(p, v) for p, v in self._entries.values()]

    def __len__(self):
        return len(self._entries)


def clips_gradients(group):
    """Whether a parameter group asks for gradient clipping (OneFlow 0.9: both options given)."""
    return "clip_grad_max_norm" in group and "clip_grad_norm_type" in group


def pieces(t):
    """This rank's arrays of tensor `t` (in-place updates of them update the tensor); [] outside its placement."""
    return t._value.pieces


def _sharded_state_layout(param, state):
    """The SBP of `param`'s whole-shaped optimizer states where they are laid out otherwise than the parameter
    (an nn.Graph with ZeRO split them), else None."""
    if not param.is_global:
        return None
    for value in state.values():
        if isinstance(value, Tensor) and value.is_global and tuple(value.shape) == tuple(param.shape) and \
                value._value.sbp != param._value.sbp:
            return tuple(value.sbp)
    return None


def _store_bfloat16(param, state):
    """A bfloat16 parameter and its bfloat16 states after an update hold bfloat16 numbers again
    (float32 storage, kernels/bfloat16.py): the update computes in float32 and stores rounded to nearest even, as
    OneFlow 0.9's update kernels store their bfloat16 model and state (core/common/bfloat16.h's conversion)."""
    if param.dtype is not dtypes.bfloat16:
        return
    for t in [param] + [v for v in state.values() if isinstance(v, Tensor) and v.dtype is dtypes.bfloat16]:
        for piece in pieces(t):
            piece[...] = bf16_k.round_to_bfloat16(array_module(piece), piece)


def array_module(array):
    return devices.module_of(array)


def zeros_like(t):
    """A zero tensor laid out like `t` (same placement, SBP and device), for optimizer state."""
    v = t._value
    arrays = []
    for p in v.pieces:
        xp = array_module(p)
        arrays.append(xp.zeros(p.shape, dtype=p.dtype))
    value = global_eager.Value(TensorMeta(v.meta.shape, v.meta.dtype), v.placement, v.sbp, arrays)
    return Tensor._make(value, t._placement, t._sbp, t._device)


class Optimizer:
    """Base class: `params` is an iterable of parameters or of dicts (one per group, with per-group options);
    `defaults` are the options of groups that do not set them."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = _State()
        self._step_count = 0
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got a Tensor")
        is_iterator = isinstance(params, collections.abc.Iterator)
        groups = list(params)
        if not groups and is_iterator:
            # OneFlow 0.9 (`Optimizer._parse_input_parameters`, python/oneflow/optim/optimizer.py@v0.9.0) makes one
            # empty group of an exhausted iterator: `SGD(m.parameters())` on a module without parameters (a
            # BatchNorm with affine=False) is a valid optimizer that updates nothing
            groups = [{"params": []}]
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError("param group must be a dict, got %s" % type(param_group).__name__)
        group = ParamGroup(param_group)
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is %s"
                                % type(p).__name__)
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        group["params"] = params
        for key, default in self.defaults.items():
            group.setdefault(key, default)
        self._check_group(group)
        self.param_groups.append(group)

    def _check_group(self, group):
        """Validates a group's options (subclasses)."""

    def clip_grad(self, error_if_nonfinite=False):
        """Clips each group's gradients to the group's `clip_grad_max_norm` under its `clip_grad_norm_type` (both set
        when the group was made: OneFlow 0.9's `Optimizer.clip_grad`, python/oneflow/optim/optimizer.py@v0.9.0);
        call it between `backward()` and `step()`. nn.Graph clips such groups by itself."""
        import warnings

        from oneflow_compat.nn.utils.clip_grad import clip_grad_norm_

        for group in self.param_groups:
            if clips_gradients(group):
                clip_grad_norm_(group["params"], group["clip_grad_max_norm"], group["clip_grad_norm_type"],
                                error_if_nonfinite)
            else:
                warnings.warn("To enable clip_grad, passing the `clip_grad_max_norm` and `clip_grad_norm_type` "
                              "parameters when instantializing the Optimizer.", UserWarning, stacklevel=2)

    def zero_grad(self, set_to_none=False):
        """Zeroes every parameter's gradient (or drops it: `set_to_none=True`)."""
        for group in self.param_groups:
            for p in group["params"]:
                p._zero_grad_(set_to_none)  # (a global gradient's broadcast becomes partial_sum, as OneFlow 0.9)

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        self._warn_replaced_parameters()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state.setdefault(p, {})
                layout = _sharded_state_layout(p, state)
                with device_keys.current(p._device):  # (a parameter on "cuda:K": updated on that GPU)
                    if layout is None:
                        self._update(group, p, state)
                    else:
                        self._update_sharded(group, p, state, layout)
                    _store_bfloat16(p, state)
        self._step_count += 1
        return loss

    def _update_sharded(self, group, param, state, layout):
        """An eager step on a parameter whose optimizer states an nn.Graph with ZeRO split (passes/zero.py) while
        the parameter itself is broadcast (e.g. a ZeRO checkpoint's states loaded beside whole parameters): as the
        graph's step, the update runs on this rank's rows of the parameter and gradient laid out as the states, and
        the updated rows are gathered into the parameter, so the states keep their 1/n layout and the numbers are
        the whole update's."""
        rows = param.detach().to_global(placement=param.placement, sbp=layout)
        shard = Tensor._make(rows._value, param.placement, None, rows._device)
        shard._grad = param.grad.detach().to_global(placement=param.placement, sbp=layout)
        self._update(group, shard, state)
        whole = shard.to_global(placement=param.placement, sbp=param.sbp)
        for mine, new in zip(pieces(param), pieces(whole)):
            mine[...] = new

    def _warn_replaced_parameters(self):
        """Once per optimizer: parameters that `module.to_global(...)` (or another local <-> global conversion)
        replaced after this optimizer was created; the module trains on the new ones, which this optimizer does not
        update."""
        if getattr(self, "_replaced_warned", False):
            return
        replaced = [p._replaced_by_conversion for g in self.param_groups for p in g["params"]
                    if getattr(p, "_replaced_by_conversion", None)]
        if replaced:
            import warnings

            self._replaced_warned = True
            warnings.warn("%s.step(): %s%s %s replaced by a local <-> global conversion (module.to_global(...)) "
                          "after this optimizer was created, so this optimizer updates parameters the module no "
                          "longer uses; create the optimizer after module.to_global(...)"
                          % (type(self).__name__, ", ".join(replaced[:3]),
                             " and %d more" % (len(replaced) - 3) if len(replaced) > 3 else "",
                             "was" if len(replaced) == 1 else "were"), UserWarning, stacklevel=3)

    def _update(self, group, param, state):
        """Updates `param` (and its `state` dict) in place from `param.grad` on this rank's pieces."""
        raise NotImplementedError

    @staticmethod
    def _grad_pieces(param):
        """The gradient's pieces on the parameter's own layout (it is already there unless the user assigned
        another gradient)."""
        g = param.grad
        if g.is_global and (g.placement != param.placement or g.sbp != param.sbp):
            have, want = g._value, param._value
            if have.placement == want.placement and have.sbp == want.sbp:
                # the values lie alike (on one device a zeroed gradient shows partial_sum over a broadcast value):
                # its pieces are what the update reads, with no to_global (which would copy them). After a
                # backward a gradient shows its parameter's SBP (Tensor._add_to_grad, as OneFlow 0.9)
                return pieces(g)
            g = g.to_global(param.placement, param.sbp)
        return pieces(g)

    # --- state dict ------------------------------------------------------------------------------------------
    def state_dict(self):
        """{"state": {parameter index: {name: value}, "step": steps taken}, "param_groups": [options + "params":
        [indices]]} — the parameters numbered in group order, as OneFlow and PyTorch do."""
        index, groups = {}, []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = collections.OrderedDict()
        for group in self.param_groups:
            for p in group["params"]:
                if p in self.state:
                    state[index[id(p)]] = {k: (v.detach() if isinstance(v, Tensor) else v)
                                           for k, v in self.state[p].items()}
        # OneFlow 0.9 keeps its step count in the state (`_state["step"]`, python/oneflow/optim/optimizer.py@v0.9.0),
        # so a restored Adam/AdamW/LAMB continues its bias correction and Adagrad its lr decay
        state["step"] = self._step_count
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restores options and state saved by `state_dict()` into this optimizer's parameters (matched by
        position); state tensors are copied onto each parameter's layout."""
        from oneflow_compat._global import state_values

        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, saved in zip(self.param_groups, groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
        by_index = {}
        for mine, saved in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], saved["params"]):
                by_index[i] = p
        restored = []
        step = state_dict["state"].get("step")
        for i, entries in state_dict["state"].items():
            if i == "step":
                continue
            p = by_index.get(int(i))
            if p is None:
                continue
            entry = {}
            for name, value in entries.items():
                if isinstance(value, Tensor) or hasattr(value, "numpy"):
                    problem = state_values.check(value, p)
                    if problem is not None:
                        raise ValueError("optimizer state '%s' of parameter %d: %s" % (name, int(i), problem))
                    target = zeros_like(p)
                    state_values.copy_into(target, value)
                    entry[name] = target
                else:
                    entry[name] = value
            restored.append((p, entry))
        for mine, saved in zip(self.param_groups, groups):
            for key, value in saved.items():
                if key != "params":
                    mine[key] = value
        if step is not None:
            self._step_count = int(step)
        self.state = _State()
        for p, entry in restored:
            self.state[p] = entry

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append("Parameter Group %d" % i)
            for key in sorted(k for k in group if k != "params"):
                lines.append("    %s: %s" % (key, group[key]))
        lines.append(")")
        return "\n".join(lines)
