"""Tensors inside `nn.Graph.build`: while a graph traces its `build`, ops on tensors add ops to the graph's job
instead of running (the switch is made here, for `dispatch.apply_op`, `to_global` and `backward`).

A lazy tensor is a `Tensor` whose `_value` is a `runtime.graph_trace.LazyValue`. An eager tensor reaching an op
inside `build` is read through the job's variable bound to it (a module parameter, named by its attribute path,
or a captured constant). Calls of modules are observed (`module_call`): the graph knows each registered module's
attribute path (op names) and pipeline stage (ops are recorded per stage; a stage placed with
`set_stage(i, placement)` moves the module's tensor inputs onto that placement, keeping their SBP).
"""
import warnings

from oneflow_compat import sbp as flow_sbp
from oneflow_compat.ir import sbp as S
from oneflow_compat.runtime import context
from oneflow_compat.runtime.graph_trace import LazyValue
from oneflow_compat._global import tensor as _tensor
from oneflow_compat._global.tensor import Tensor

_CTX = context.CURRENT  # `_CTX.graph_traces`: (GraphTrace, GraphScope) of the builds being traced, innermost last


class GraphScope:
    """What the tracing graph knows of the modules it holds: {id(module): (path, stage id, placement)} and
    {id(tensor): variable name} of their parameters and buffers."""

    def __init__(self, modules, names, trainable, checkpointing=None, blocks=None):
        self.modules = modules
        self.blocks = blocks or {}  # {id(module): its graph Block}: `module.to(GraphModule)` inside build
        self.names = names
        self.trainable = trainable  # ids of the parameters the graph's optimizers update
        # {id(module): True/False} of the modules whose activation_checkpointing was set (None: inherited)
        self.checkpointing = checkpointing or {}


class tracing:  # noqa: N801 - a context manager
    def __init__(self, trace, scope):
        self.entry = (trace, scope)

    def __enter__(self):
        _CTX.graph_traces.append(self.entry)
        return self.entry[0]

    def __exit__(self, *exc):
        _CTX.graph_traces.remove(self.entry)
        return False


def context_entry():
    """(GraphTrace, GraphScope) of the build being traced (for `tracing(...)` again later, as a custom backward
    traced while the graph's backward is built does)."""
    return _CTX.graph_traces[-1]


def current():
    """The GraphTrace of the build being traced, or None."""
    return _CTX.graph_traces[-1][0] if _CTX.graph_traces else None


def block_of(module):
    """The Block of a module registered into the graph being traced (its `to(GraphModule)` inside forward, as
    OneFlow 0.9's proxy answers it: nn/graph/proxy.py), or None."""
    if not _CTX.graph_traces:
        return None
    return _CTX.graph_traces[-1][1].blocks.get(id(module))


def is_lazy(t):
    return isinstance(t._value, LazyValue)


def _lazy_value(trace, scope, t):
    """The LazyValue `t` is read as inside the trace: its own, or its variable's for an eager tensor."""
    v = t._value
    if isinstance(v, LazyValue):
        if v.trace is not trace:
            raise RuntimeError("a lazy tensor of another nn.Graph's build() was used in this graph's build()")
        return v
    renamed = trace.renamed.get(id(t))
    if renamed is not None:  # an in-place op in build gave this captured eager tensor a new value (`rename_captured`)
        return renamed[0]
    if t._view_root is not None:
        # a free eager tensor that is a non-contiguous view is made contiguous in place as the graph captures it
        # (OneFlow 0.9 AddFreeEagerTensorToVariableOp: oneflow/core/framework/op_interpreter/
        # lazy_op_interpreter.cpp:204-208 @ v0.9.0)
        from oneflow_compat._global import views

        if not views.is_contiguous(t):
            views.contiguous_(t)
    name = scope.names.get(id(t))
    trainable = id(t) in scope.trainable
    return trace.variable_for(t, name, trainable)


def rename_captured(t, result):
    """In-place op on eager tensor `t` inside build: `t` reads as the op's lazy output `result` from now on in this
    build (OneFlow 0.9 records the output's name for the tensor; `inplace.rebind`). The eager tensor is kept
    alive with the trace, so that its id stays its own."""
    current().renamed[id(t)] = (result._value, t, result.requires_grad_flag)


def _requires_grad(trace, t):
    hit = trace.renamed.get(id(t)) if trace.renamed and not is_lazy(t) else None
    return hit[2] if hit is not None else t.requires_grad_flag


def _wrap(value, like, requires_grad):
    t = Tensor._make(value, like._placement, None, like._device)
    t.requires_grad_flag = bool(requires_grad) and value.meta.dtype.is_floating
    return t


def apply(op_type, inputs, attrs):
    """Adds op `op_type` on `inputs` (Tensors) to the graph being traced; returns its outputs as lazy Tensors."""
    trace, scope = _CTX.graph_traces[-1]
    values = [_lazy_value(trace, scope, t) for t in inputs]
    first = inputs[0]
    outs = trace.apply(op_type, attrs, values, values[0].placement)
    records = getattr(trace, "op_records", None)  # nn.Graph's debug lines (graph_debug.py)
    if records is not None and outs:
        path = next((p for p, _ in reversed(trace.scopes) if p), "")
        records.record(path, op_type, outs[0].blob.op, [v.blob for v in values])
    rg = any(_requires_grad(trace, t) for t in inputs)
    return [_wrap(v, first, rg) for v in outs]


def apply_source(op_type, attrs, like):
    """An op without inputs on `like`'s placement."""
    trace = current()
    outs = trace.apply(op_type, attrs, [], like._value.placement)
    return [_wrap(v, like, False) for v in outs]


def to_global(t, placement, ir_sbp, shown, grad_sbp=None):
    """`t.to_global(placement, sbp)` inside build: an op of the job that the boxing pass turns into the transfer."""
    trace, scope = _CTX.graph_traces[-1]
    if t.is_local:
        raise RuntimeError("local_tensor.to_global() is not supported within nn.Graph for now")
    value = _lazy_value(trace, scope, t)
    out = trace.to_global(value, placement.ir(), ir_sbp, grad_sbp)
    result = Tensor._make(out, placement, shown, t._device)
    result.requires_grad_flag = t.requires_grad_flag
    return result


def to_device(t, key):
    """`local_tensor.to("cuda")` (or any other device) inside build: OneFlow 0.9's To functor adds its `copy` op to
    the job (core/functional/impl/array_functor.cpp ToFunctor -> CopyFunctor at v0.9.0; test/graph/test_graph_copy.py
    moves the graph's input so). Here an identity pinned to the same devices of the other type, broadcast, for which
    the boxing pass inserts the transfer; the result is a local lazy tensor on device `key`."""
    from oneflow_compat.backend import devices
    from oneflow_compat.ir.placement import Placement as IrPlacement

    trace, scope = _CTX.graph_traces[-1]
    value = _lazy_value(trace, scope, t)
    kind = key.split(":")[0]
    here = value.placement
    tag = devices.resolve_tag("gpu" if kind == "cuda" else "cpu", spelled=kind)
    there = IrPlacement(tag, here.pairs, requested_tag="gpu" if kind == "cuda" else "cpu", hierarchy=here.hierarchy)
    out = trace.to_global(value, there, S.B)
    result = Tensor._make(out, None, None, key)
    result.requires_grad_flag = _requires_grad(trace, t)
    return result


def backward(t, gradient=None, retain_graph=False):
    """`loss.backward()` inside build: marks the loss of the graph's training step."""
    if not is_lazy(t):
        raise AssertionError("nn.Graph only accept lazy tensor to call backward() in lazy mode.")
    if t.numel() != 1:
        raise AssertionError(" loss_tensor.backward(), loss_tensor must be a scalar in nn.Graph, please use "
                             "loss_tensor.sum() or loss_tensor.mean() to make it a scalar tensor.")
    if gradient is not None:
        raise AssertionError("nn.Graph donot accept 'gradient' argument in backward() at the moment.")
    if retain_graph:
        raise AssertionError("nn.Graph donot accept 'retain_graph' argument in backward() at the moment.")
    trace = current()
    if not trace.job.is_train:
        raise RuntimeError("loss.backward() in nn.Graph '%s'.build() needs an optimizer: call "
                           "self.add_optimizer(optimizer) in the graph's __init__" % trace.job.name)
    trace.mark_loss(t._value)


# --- gradients inside build: `t.retain_grad()` and `t.grad` after `loss.backward()` -----------------------------
def retain_grad(t):
    """`t.retain_grad()` on a lazy tensor (OneFlow 0.9 tensor_impl.cpp `set_retain_grad`: a tensor that does not
    require grad is refused; a graph input requires grad when the eager tensor passed in does)."""
    if not t.requires_grad_flag:
        raise RuntimeError("Can't retain_grad on Tensor that has requires_grad=False")
    t._retaining = True


def grad_of(t):
    """`t.grad` while a build is traced: after `loss.backward()`, the lazy gradient of a retained lazy tensor or of
    a parameter (any eager tensor the job reads as a variable) that requires grad — the job's gradient blob
    (runtime/graph_trace.py `grad_value`), a graph output or the input of further ops; None where no loss
    depends on it. Otherwise what `.grad` holds (None for a lazy tensor)."""
    trace, scope = _CTX.graph_traces[-1]
    if not trace.job.losses or not t.requires_grad_flag:
        return t._grad
    if is_lazy(t):
        if t._value.trace is not trace or not getattr(t, "_retaining", False):
            return t._grad
        blob = t._value.blob
    else:
        hit = trace._var_of.get(id(t))
        if hit is None:
            return t._grad
        blob = hit.blob
    grads = trace.grad_tensors  # one tensor per gradient blob: `p.grad is p.grad`, and what it is made in place
    key = blob.key()
    hit = grads.get(key)
    if hit is None:
        value = trace.grad_value(blob)
        if value is None:
            return t._grad
        hit = grads[key] = _wrap(value, t, False)
    return hit


def variable_gradients(trace):
    """{variable name: gradient blob} of the parameters whose `.grad` build changed in place (`p.grad.mul_(c)`,
    `clip_grad_norm_`): the gradient the optimizer then updates with (OneFlow 0.9 nn/graph/graph.py
    `_mark_variable_gradients`: a parameter's lazy `.grad` at the end of build is its variable's gradient)."""
    out = {}
    for key, t in trace.grad_tensors.items():
        op = trace.job.grad_requests[key]
        src = op.inputs[0].op
        if src.type == "variable" and t._value.blob is not op.outputs[0]:
            out[src.attrs["name"]] = t._value.blob
    return out


_tensor.LAZY_GRADS.update(grad_of=grad_of, retain_grad=retain_grad)


# --- module calls inside build ------------------------------------------------------------------------------------
def module_call(module, call, args, kwargs):
    """How `Module.__call__` runs while a graph traces: `call(args, kwargs)` inside the module's scope (its path
    names the ops, its stage is recorded; `set_stage(i, placement)` moves tensor inputs onto the placement)."""
    if not _CTX.graph_traces:
        return call(args, kwargs)
    trace, scope = _CTX.graph_traces[-1]
    if id(module) not in scope.modules:
        # OneFlow 0.9's Module.__call__ in lazy mode (nn/modules/module.py:150-155@v0.9.0; a registered module is
        # called through its graph proxy instead): the module runs, with this warning
        warnings.warn(module._shallow_repr() + " is called in a nn.Graph, but not registered into a nn.Graph.")
    path, stage, placement = scope.modules.get(id(module), ("", None, None))
    if placement is not None:
        args = tuple(_onto(a, placement) for a in args)
        kwargs = {k: _onto(v, placement) for k, v in kwargs.items()}
    checkpointing = scope.checkpointing.get(id(module))
    if checkpointing and trace.job.is_train:
        # OneFlow 0.9 (nn/graph/proxy.py __pre_forward_map): a checkpointed module's tensor inputs pass through an
        # identity made outside its checkpointing scope, one per input tensor: the tensors kept for the backward,
        # which also separates consecutive checkpointed modules into segments of their own
        args = tuple(_checkpoint_input(trace, a) for a in args)
        kwargs = {k: _checkpoint_input(trace, v) for k, v in kwargs.items()}
    records = getattr(trace, "op_records", None)
    if records is not None and path:
        _record_module_io(records, path, "input", (args, kwargs))
    trace.scopes.append((path, stage))
    trace.checkpointing.append(checkpointing)
    try:
        result = call(args, kwargs)
    finally:
        trace.scopes.pop()
        trace.checkpointing.pop()
    if records is not None and path:
        _record_module_io(records, path, "output", (result if isinstance(result, (tuple, list)) else (result,), {}))
    return result


def _record_module_io(records, path, kind, args_kwargs):
    """The (INPUT: ...) / (OUTPUT: ...) lines of one module call (OneFlow 0.9 `nn/graph/proxy.py`)."""
    from oneflow_compat._global import graph_debug
    from oneflow_compat._global.tensor import _lazy_repr

    lines = records.module_io.setdefault(path, ([], []))[0 if kind == "input" else 1]
    del lines[:]
    for value, name in graph_debug.arg_names("_%s_%s" % (path, kind), *args_kwargs):
        if isinstance(value, Tensor):
            lines.append("(%s:%s:%s)" % (kind.upper(), name, _lazy_repr(value)))
        else:
            lines.append("[WARNING](%s:%s:%s)" % (kind.upper(), name, type(value)))


def _checkpoint_input(trace, x):
    if isinstance(x, (list, tuple)):
        return type(x)(_checkpoint_input(trace, v) for v in x)
    if not isinstance(x, Tensor) or not is_lazy(x):
        return x
    cache = trace.checkpoint_inputs  # OneFlow's _unique_identity_op_dict: one identity per input tensor
    hit = cache.get(id(x))
    if hit is None:
        hit = cache[id(x)] = (apply("identity", [x], {})[0], x)  # the input is kept: its id is not reused
    return hit[0]


def _onto(x, placement):
    if isinstance(x, (list, tuple)):
        return type(x)(_onto(v, placement) for v in x)
    if not isinstance(x, Tensor) or x.is_local or x.placement == placement:
        return x
    ir_sbp = x._value.sbp
    if placement.is_nd:  # a mesh: the SBP is kept where the two meshes have as many axes, else B
        mesh = tuple(placement.hierarchy)
        keep = S.is_nd(ir_sbp) and len(ir_sbp.sbps) == len(mesh)
        ir_sbp = S.nd(ir_sbp.sbps if keep else (S.B,) * len(mesh), mesh)
        shown = flow_sbp.symbols_of(ir_sbp)
    elif S.is_nd(ir_sbp):
        ir_sbp, shown = S.B, (flow_sbp.broadcast,)
    elif S.is_split(ir_sbp) or ir_sbp in (S.B, S.P):
        shown = (flow_sbp.from_ir(ir_sbp),)
    else:
        ir_sbp, shown = S.B, (flow_sbp.broadcast,)
    return to_global(x, placement, ir_sbp, shown)


class eager_constants:  # noqa: N801 - a context manager
    """Constants the framework makes inside build (setitem's index and scalar value) are eager tensors, which the
    job then reads as captured variables: OneFlow 0.9 makes setitem's value with LazyMode::Guard(false)
    (api/python/framework/tensor_functions.cpp PyTensorObject_setitem)."""

    def __enter__(self):
        self.saved = list(_CTX.graph_traces)
        _CTX.graph_traces.clear()

    def __exit__(self, *exc):
        _CTX.graph_traces.extend(self.saved)
        return False


def tracer_active():
    return bool(_CTX.graph_traces)
