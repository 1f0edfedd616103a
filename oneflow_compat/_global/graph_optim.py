"""`nn.Graph.add_optimizer`: a modern optimizer (`flow.optim.SGD`, `Adam`, and the `optim.elementwise`
optimizers AdamW, RMSprop, Adagrad, Adadelta, LAMB) as the job's optimizer description, so
that the optimizer pass (`passes/optimizer_pass.py`) builds the compiled step's update ops from it.

Each parameter group is one leaf optimizer of the legacy protocol (`optimizer/optimizers.py` lists it): its
variables are the group's parameters (by their names in the job), its learning rate is the group's `lr` when the
step runs (a scheduler added with the optimizer moves it after every call, as `lr_sch.step()` after
`optimizer.step()` does eagerly), and its update is the eager optimizer's own per-piece update
(`optim.sgd.momentum_update` / `plain_update`, `optim.adam.piece_update`): one formula, one set of kernels, in
eager steps and compiled steps alike. The state variables (momentum, Adam moments) are bound to the eager
optimizer's state tensors, so the graph and eager steps continue each other's state; Adam's bias correction
counts the optimizer's steps (`_step_count`, advanced after every graph call like `step()` advances it).
"""
import numpy as np

from oneflow_compat.optim import adam as adam_mod
from oneflow_compat.optim import sgd as sgd_mod
from oneflow_compat.optim.elementwise import PieceOptimizer
from oneflow_compat.optim.optimizer import clips_gradients, zeros_like
from oneflow_compat.optimizer.grad_clipping import by_max_norm


class Added(tuple):
    """(optimizer, lr scheduler or None) as `nn.Graph.add_optimizer` got them, with `is_sparse`."""

    def __new__(cls, optim, lr_sch, is_sparse=False):
        self = super().__new__(cls, (optim, lr_sch))
        self.is_sparse = bool(is_sparse)
        return self


def supports_sparse(optim):
    """OneFlow 0.9's `support_sparse`: SGD, Adam and AdamW (python/oneflow/nn/optimizer/{sgd,adam,adamw}.py)."""
    from oneflow_compat.optim.adaptive import AdamW

    return isinstance(optim, (sgd_mod.SGD, adam_mod.Adam, AdamW))


# eager state name -> the name OneFlow 0.9's optimizer passes give the state variable ("<variable>-<name>"):
# job_rewriter/momentum_optm.cpp:29 "-momentum", adam_optm.cpp:119-123 and lamb_optm.cpp:92-93 "m" / "v" / "max_v",
# rmsprop_optm.cpp:45,70 "mean_square" / "mean_gradient"; Adagrad's "sum" and Adadelta's "square_avgs" /
# "acc_deltas" are the eager names already (adagrad_optm.cpp:67, adadelta_optim.cpp:65-66), all at v0.9.0
_JOB_STATE_NAMES = {"momentum_buf": "momentum", "exp_avg": "m", "exp_avg_sq": "v", "max_exp_avg_sq": "max_v",
                    "square_avg": "mean_square", "grad_avg": "mean_gradient"}


class _GroupRate:
    """The learning-rate schedule the job's `learning_rate` op reads: the group's current `lr`, times the group's
    `lr_scale` where it has one. OneFlow 0.9's graph copies a group's "lr_scale" into its optimizer conf
    (Optimizer._generate_lr_scale_for_optim_conf, python/oneflow/optim/optimizer.py:437@v0.9.0), which becomes
    the update op's `learning_rate_scale` attr (job_rewriter/sgd_optm.cpp:35 and the other *_optm.cpp); the
    kernel multiplies its float32 rate by it before anything else (`learning_rate_val *= lr_scale`,
    user/kernels/model_update_kernel_util.cpp:59). Eager `optimizer.step()` ignores the key (0.9 does too)."""

    def __init__(self, group):
        self.group = group

    def lr_at(self, step):
        lr = float(self.group["lr"])
        scale = self.group.get("lr_scale")
        if scale is None:
            return lr
        return float(np.float32(lr) * np.float32(float(scale)))


class GroupLeaf:
    """One parameter group of a modern optimizer, driven by the compiled step."""

    needs_whole_tensor_norms = False
    grad_clipping = None

    def __init__(self, optimizer, group, names, sparse=False):
        self.optimizer, self.group = optimizer, group
        # add_optimizer(is_sparse=True): every variable of the group whose gradient is a gather's (rows along axis
        # 0) is updated on the gathered rows alone, states included (OneFlow 0.9's indexed_slices_optimizer_conf
        # listing the optimizer's variables; passes/optimizer_pass.py `_indexed_slices_rows`)
        self.sparse_update = self.indexed_slices_update = bool(sparse)
        self.lr_scheduler = _GroupRate(group)
        self.params = {}  # variable name -> parameter
        for p in group["params"]:
            name = names.get(id(p))
            if name is not None and p.requires_grad:
                self.params[name] = p
        if clips_gradients(group):
            # OneFlow 0.9's graph turns the group's clip options into a clip_by_global_norm conf
            # (Optimizer._generate_grad_clip_conf_for_optim_conf, python/oneflow/optim/optimizer.py@v0.9.0); the
            # optimizer pass clips this group's gradients by their joint norm of the group's type (conf.norm_type:
            # p, inf or -inf), with 0.9's formula (by_max_norm)
            self.grad_clipping = by_max_norm(float(group["clip_grad_max_norm"]),
                                             float(group["clip_grad_norm_type"]))
        if isinstance(optimizer, sgd_mod.SGD):
            self.kind = "momentum" if group["momentum"] != 0 else "sgd"
            self.states = ("momentum_buf",) if self.kind == "momentum" else ()
        elif isinstance(optimizer, adam_mod.Adam):
            self.kind = "adam"
            self.states = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())
        elif isinstance(optimizer, PieceOptimizer):  # AdamW, RMSprop, Adagrad, Adadelta, LAMB
            self.kind = "piece"
            self.states = tuple(optimizer.state_names(group))
            # LAMB: on a split variable the optimizer pass runs `split_update` with the whole variable's norms
            self.needs_whole_tensor_norms = optimizer.needs_whole_tensor_norms
        else:
            raise NotImplementedError("nn.Graph.add_optimizer: %s is not supported in a graph (SGD, Adam, AdamW, "
                                      "RMSprop, Adagrad, Adadelta and LAMB are)" % type(optimizer).__name__)
        # the job's state variables are "<variable>-<name>" by OneFlow 0.9's names, the graph's state_dict keys
        # (a graph checkpoint of 0.9 loads by them); the eager optimizer's state keeps its own names
        self.job_states = tuple(_JOB_STATE_NAMES.get(s, s) for s in self.states)
        self._eager_state = dict(zip(self.job_states, self.states))

    def custom_update(self, name):
        """(op type, attrs) of the update of variable `name` when it is not the dense update: a one_embedding's
        shadow, whose looked-up rows the graph step updates (ops/one_embedding_ops.py `shadow_update`)."""
        from oneflow_compat.ops import one_embedding_ops

        return one_embedding_ops.shadow_update(self, name)

    # --- the legacy leaf-optimizer protocol -------------------------------------------------------------------
    def resolve_variables(self, job_variable_names):
        names = set(job_variable_names)
        return [n for n in self.params if n in names]

    def state_specs(self, var_name, shape, np_dtype):
        if self.kind == "piece":
            return [(j, float(self.optimizer.state_init(self.group, s))) for j, s in zip(self.job_states, self.states)]
        return [(j, 0.0) for j in self.job_states]

    def state_shape(self, suffix, var_shape):
        return tuple(var_shape)

    def weight_decay_rate(self, var_name):
        return 0.0  # the group's weight decay is part of the update formula itself

    def update_scaled(self, xp, w, g, states, *, lr, step, weight_decay, grad_scale=1.0, grad_owned=False):
        if grad_scale != 1.0:
            scale = g.dtype.type(grad_scale)
            if grad_owned:
                g *= scale
            else:
                g = g * scale
        group = self.group
        if self.kind == "sgd":
            sgd_mod.plain_update(xp, w, g, lr, group)
        elif self.kind == "momentum":
            sgd_mod.momentum_update(xp, w, g, states[0], lr, group)
        elif self.kind == "piece":
            self.optimizer.piece_update(xp, w, g, list(states), lr, self.optimizer._step_count + 1, group)
        else:
            beta1, beta2 = group["betas"]
            if group["do_bias_correction"]:
                t = self.optimizer._step_count + 1
                bc1, bc2 = 1 - beta1 ** t, 1 - beta2 ** t
            else:
                bc1 = bc2 = 1.0
            adam_mod.piece_update(xp, w, g, states, lr, bc1, bc2, group)

    def split_update(self, xp, w, g, states, *, lr, step, weight_decay):
        """The update of one piece of a split parameter by an optimizer reading whole norms (LAMB), as the
        generator the optimizer pass drives (optimizer/optimizers.py's protocol)."""
        return self.optimizer.split_piece_update(xp, w, g, list(states), lr, self.optimizer._step_count + 1,
                                                 self.group)

    # --- storage of the state variables ---------------------------------------------------------------------
    def state_tensor(self, var_name, suffix):
        """The eager optimizer's state tensor `suffix` of the parameter named `var_name` (made if missing)."""
        p = self.params[var_name]
        suffix = self._eager_state.get(suffix, suffix)
        state = self.optimizer.state.setdefault(p, {})
        if suffix not in state:
            if self.kind == "piece":
                state[suffix] = self.optimizer.new_state(p, self.group, suffix)
            else:
                state[suffix] = zeros_like(p)
        return state[suffix]


def check_optimized_parameters(optimizers, names):
    """OneFlow 0.9's checks of a graph's optimizers before it builds (Optimizer._check_variables_in_graph and
    _check_variables_optimizer_bound, python/oneflow/optim/optimizer.py, called by nn/graph/optimizer.py
    generate_optimizer_and_variable_configs @ v0.9.0), optimizer by optimizer: each parameter requiring a gradient
    is a state of the graph's modules (`names`: {id: variable name}) — a free eager tensor inside build is a
    constant the job does not train (lazy_op_interpreter.cpp AddFreeEagerTensorToVariableOp: "Free EagerTensor
    not trainable"), so an optimizer of one would update nothing — and is bound to one optimizer only."""
    bound = {}
    for opt in optimizers:
        for group in opt.param_groups:
            for param in group["params"]:
                if param.requires_grad and id(param) not in names:
                    raise ValueError("Parameter <%s> is not in the corresponding nn.Graph/nn.Module. Please make "
                                     "sure you call the module's to(..)/to_global(...) method first, then add the "
                                     "module's parameters into an optimizer." % (param,))
        for group in opt.param_groups:
            for param in group["params"]:
                if not param.requires_grad:
                    continue
                if bound.setdefault(id(param), opt) is not opt:
                    raise ValueError("<%s> is already bound to another optimizer." % names[id(param)])


class GraphOptimizers:
    """Every optimizer added to a graph, as one job optimizer (the legacy CombinedOptimizer's role)."""

    loss_scale_factor = None
    loss_scale_policy = None

    def __init__(self, added, names):
        self.added = list(added)  # [(optimizer, lr scheduler or None)]
        self.leaves = [GroupLeaf(entry[0], group, names, getattr(entry, "is_sparse", False))
                       for entry in self.added for group in entry[0].param_groups]

    def leaf_optimizers(self):
        return list(self.leaves)

    def state_getters(self):
        """{state variable name: () -> the eager state tensor} for every state the optimizer pass created."""
        out = {}
        for leaf in self.leaves:
            for var_name in leaf.params:
                for suffix in leaf.job_states:
                    out["%s-%s" % (var_name, suffix)] = _state_getter(leaf, var_name, suffix)
        return out

    def after_step(self):
        """What a call of the graph does after its update: the optimizer counts a step, schedulers step."""
        for opt, lr_sch in self.added:
            opt._step_count += 1
            if lr_sch is not None:
                lr_sch.step()


def _state_getter(leaf, var_name, suffix):
    return lambda: leaf.state_tensor(var_name, suffix)
