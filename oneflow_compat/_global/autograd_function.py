"""`oneflow.autograd.Function` (custom forward/backward pairs) and `oneflow.autograd.grad` (OneFlow 0.9).

Facts from OneFlow 0.9 (v0.9.0): `python/oneflow/autograd/autograd_function.py` (the class and its docstrings),
`oneflow/api/python/autograd/autograd_function.cpp` (what `apply` accepts and returns, its messages),
`oneflow/api/python/autograd/autograd_function_state.cpp` (the ctx, `oneflow.autograd.Function.FunctionCtx`),
`oneflow/core/framework/op_expr_grad_function.h` (`FunctionOpExprGradFunction`: the gradient count check, the
None-gradient refusal), `op_interpreter.cpp` (`AutogradInterpreter::Apply`: forward without recording, outputs
require a gradient when an input does and their dtype is floating), `autograd_engine.cpp` (`FunctionNode::Apply`:
an output no gradient reached gets zeros) and `oneflow/api/python/autograd/autograd.cpp` (`Grad`'s checks).

How it runs here: `apply` calls `forward(ctx, *inputs)` with gradient recording off, then records one
`FunctionNode` named `<ClassName>_backward` whose backward wraps the output gradients (runtime Values) as Tensors on
the outputs' placement and calls `backward(ctx, *grads)` (recording off, as OneFlow without create_graph). The
engine (`runtime/autograd.py`) sums, boxes and accumulates what it returns like any op's gradients, so global
tensors work as local ones. Inside `nn.Graph.build` OneFlow 0.9 traces the forward and the custom backward into
the graph: so does `_apply_lazy`.
"""
from oneflow_compat._global import creation, higher_order, lazy
from oneflow_compat._global.dispatch import backward as _run_backward
from oneflow_compat._global.tensor import Tensor, wrap
from oneflow_compat.runtime import autograd
from oneflow_compat.runtime.graph_trace import LazyValue

__all__ = ["Function", "FunctionCtx", "grad"]

_RELEASED = ("Data is deallocated. Please don't hold context outside autograd.Function.forward or "
             "autograd.Function.backward")  # OneFlow 0.9's words (autograd_function_state.cpp)


class FunctionCtx:
    """The `ctx` handed to `forward` and `backward` (OneFlow 0.9 names its type
    `oneflow.autograd.Function.FunctionCtx`): saves tensors for the backward, marks non-differentiable outputs,
    and keeps any attribute the forward sets (`ctx.scale = 2.0`)."""

    def __init__(self):
        object.__setattr__(self, "_saved", [])
        object.__setattr__(self, "_non_differentiable", set())
        object.__setattr__(self, "_valid", True)

    def save_for_backward(self, *tensors):
        """Keeps `tensors` for the backward (read back as `ctx.saved_tensors`, in this order)."""
        self._check_valid()
        if not all(isinstance(t, Tensor) for t in tensors):
            raise TypeError("save_for_backward() only support Tensor or Tensors")  # OneFlow 0.9's words
        hooks = autograd.SAVED_TENSORS_HOOKS
        if hooks:
            # saved_tensors_hooks apply to a Function's saved tensors too (OneFlow 0.9: its FunctionNode saves
            # through SaveTensorForBackward like any op): pack now, unpack when `saved_tensors` is read
            pack, unpack = hooks[-1]
            self._saved.extend(_Packed(pack(t), unpack) for t in tensors)
        else:
            self._saved.extend(tensors)

    def mark_non_differentiable(self, *tensors):
        """Marks outputs of `forward` that get no gradient: they come out with `requires_grad=False` and
        `grad_fn=None`, and their gradient reaches `backward` as None."""
        self._check_valid()
        if not all(isinstance(t, Tensor) for t in tensors):
            # (OneFlow 0.9 says save_for_backward here too: its message, copied as it is)
            raise TypeError("save_for_backward() only support Tensor or Tensors")
        self._non_differentiable.update(id(t) for t in tensors)

    @property
    def saved_tensors(self):
        """The tensors given to `save_for_backward`, as a tuple."""
        self._check_valid()
        return tuple(t.unpacked() if isinstance(t, _Packed) else t for t in self._saved)

    def _is_data_valid(self):
        """False once the node's backward ran without retain_graph (its saved tensors are freed), as OneFlow's."""
        return self._valid

    def _check_valid(self):
        if not self._valid:
            raise RuntimeError(_RELEASED)

    def _release(self):
        self._saved.clear()
        object.__setattr__(self, "_valid", False)


class _Packed:
    """A tensor saved under saved_tensors_hooks: what the pack hook returned, and the unpack hook."""

    __slots__ = ("obj", "unpack")

    def __init__(self, obj, unpack):
        self.obj, self.unpack = obj, unpack

    def unpacked(self):
        t = self.unpack(self.obj)
        if not isinstance(t, Tensor):  # OneFlow 0.9's words (api/python/autograd/autograd.cpp)
            raise RuntimeError("unpack_hook should return a Tensor, but got `%s` instead" % (type(t),))
        return t


def _unpack(result, what):
    """A forward's or backward's result as a list of Tensor-or-None (OneFlow 0.9 `UnpackTensorTuple`): a Tensor,
    or a tuple whose elements are Tensors or None."""
    if isinstance(result, Tensor):
        return [result]
    if isinstance(result, tuple):
        for i, r in enumerate(result):
            if r is not None and not isinstance(r, Tensor):
                raise RuntimeError("expected Tensor or None as element %d, but got %s" % (i, type(r)))
        return list(result)
    raise RuntimeError("autograd.Function's output only support tensor or list of tensors")


def _pack(outs):
    return outs[0] if len(outs) == 1 else tuple(outs)


class Function:
    r"""Base class to create custom autograd.Function (OneFlow 0.9's docstring).

    To create a custom autograd.Function, subclass this class and implement the ``forward()`` and ``backward()``
    static methods. Then, to use your custom op in the forward pass, call the class method ``apply()`` or
    ``__call__()``. Do not call ``forward()`` directly::

        class Exp(Function):
            @staticmethod
            def forward(ctx, i):
                result = i.exp()
                ctx.save_for_backward(result)
                return result

            @staticmethod
            def backward(ctx, grad_output):
                result, = ctx.saved_tensors
                return grad_output * result

        output = Exp.apply(input)  # output = Exp()(input)

    Every argument of `apply` is a Tensor or None (OneFlow 0.9 refuses others: "expected Tensor or None as element
    i, ..."; keep constants on `ctx` or in the class). `backward` gets one gradient per output (None for an output
    marked non-differentiable, zeros for one no gradient reached) and returns one per input (a Tensor, or a tuple
    for several; None where the input needs no gradient).
    """

    FunctionCtx = FunctionCtx

    def __init__(self):
        pass

    def __call__(self, *inputs):
        """See :meth:`apply`."""
        return self.apply(*inputs)

    @classmethod
    def apply(cls, *inputs):
        """Calculate output tensors and build backward graph."""
        for i, x in enumerate(inputs):
            if x is not None and not isinstance(x, Tensor):
                raise RuntimeError("expected Tensor or None as element %d, but got %s" % (i, type(x)))
        if lazy.tracer_active():
            return _apply_lazy(cls, inputs)
        return _apply_eager(cls, inputs)

    @staticmethod
    def forward(ctx, *inputs):
        """Override this function for custom forward calculation."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *out_grads):
        """Override this function for custom backward calculation."""
        raise NotImplementedError("You must implement the backward function for custom autograd.Function.")


def _apply_eager(cls, inputs):
    ctx = FunctionCtx()
    wants = [x is not None and x.requires_grad_flag for x in inputs]
    record = autograd.is_grad_enabled() and any(wants)
    with autograd.no_grad():
        outs = _unpack(cls.forward(ctx, *inputs), "forward")
    if not record:
        return _pack(outs)
    # an output that is an input object unchanged gets its own Tensor (the input keeps its own history)
    ids = {id(x) for x in inputs if x is not None}
    outs = [Tensor._make(o._value, o._placement, o._sbp, o._device) if o is not None and id(o) in ids else o
            for o in outs]
    layouts = [None if o is None else (o._value, o._placement, o._device) for o in outs]
    differentiable = [o is not None and id(o) not in ctx._non_differentiable and o._value.meta.dtype.is_floating
                      for o in outs]
    name = cls.__name__

    def input_grads(grads_out, record):
        """The backward on output gradients (Tensors, None where none reached an output): input gradients as
        Tensors (None where no input wants one). `record`: recorded (create_graph) or not, as OneFlow's
        `AutoGradMode mode(create_graph)`."""
        ctx._check_valid()
        grads = []
        for g, layout, diff in zip(grads_out, layouts, differentiable):
            if not diff:
                grads.append(None)
            elif g is None:  # no gradient reached this output: zeros (OneFlow 0.9 FunctionNode::Apply)
                value, placement, device = layout
                grads.append(_zeros_like(value, placement, device))
            else:
                grads.append(g)
        with autograd.set_grad_enabled(record):
            result = _unpack(cls.backward(ctx, *grads), "backward")
        if len(result) != len(inputs):
            raise RuntimeError("RuntimeError: function %s returned an incorrect number of gradients (expected %d, got %d)"
                               % (name, len(inputs), len(result)))
        dxs = []
        for i, (x, want, g) in enumerate(zip(inputs, wants, result)):
            if not want:
                dxs.append(None)
                continue
            if g is None:
                raise RuntimeError("autograd.Function named %s's inputs[%d] requires grad but got None grad. "
                                   "Please use Tensor.detach() for this input." % (name, i))
            if tuple(g.shape) != tuple(x.shape):
                raise RuntimeError("function %s returned a gradient of shape %s for inputs[%d], whose shape is %s"
                                   % (name, tuple(g.shape), i, tuple(x.shape)))
            if g.is_global != x.is_global:
                raise RuntimeError("function %s returned a %s gradient for the %s tensor inputs[%d]"
                                   % (name, "global" if g.is_global else "local",
                                      "global" if x.is_global else "local", i))
            dxs.append(g)
        return dxs

    def run_backward(dys):
        grads_out = [None if dy is None or layout is None else wrap(dy, layout[1], layout[2])
                     for dy, layout in zip(dys, layouts)]
        return [None if g is None else g._value for g in input_grads(grads_out, False)]

    node = _FunctionNode(name + "_backward", [x._edge() if w else None for x, w in zip(inputs, wants)],
                         run_backward, len(outs), ctx)
    node.backward_tensors = lambda dys: input_grads(dys, True)  # a recorded pass (_global/higher_order.py)
    for k, (o, diff) in enumerate(zip(outs, differentiable)):
        if o is None:
            continue
        if diff:
            o.requires_grad_flag, o._node, o._out_index = True, node, k
        else:
            o.requires_grad_flag = False
    return _pack(outs)


class _FunctionNode(autograd.FunctionNode):
    """The node of one `Function.apply`: after a backward pass without retain_graph its ctx is released (when
    it saved tensors, as OneFlow's `GraphFunctionNode::ReleaseData`), and a second pass says so."""

    def __init__(self, name, next_edges, fn, num_outputs, ctx):
        super().__init__(name, next_edges, fn, num_outputs)
        self.ctx = ctx

    def backward(self, dys):
        if self.fn is None:
            raise RuntimeError("This FunctionNode with name `%s` has been released.\nMaybe you try to backward "
                               "through the node a second time. Specify retain_graph=True when calling "
                               ".backward() or autograd.grad() the first time." % self._name)
        return self.fn(dys)

    def release(self):
        if self.ctx._saved:
            self.ctx._release()
            self.fn = None


def _zeros_like(value, placement, device):
    from oneflow_compat.runtime import global_eager

    xp = global_eager.xp(value.placement)
    pieces = [xp.zeros(p.shape, dtype=p.dtype) for p in value.pieces]
    return wrap(global_eager.Value(value.meta, value.placement, value.sbp, pieces), placement, device)


def _apply_lazy(cls, inputs):
    """Inside `nn.Graph.build` (OneFlow 0.9 traces the forward, `LazyInterpreter::ApplyImpl` of a FunctionOpExpr,
    and, when the graph's backward is built, the custom backward): the forward's ops are traced into the job; in a
    training graph where an input needs a gradient, its outputs then pass through one `tuple_identity` op that
    also reads the inputs wanting a gradient, and that op's gradient rule, for this op alone
    (`job.custom_grads`, read by `passes/autodiff.py`), traces `backward(ctx, *output grads)` into the job's
    backward section: the inputs get what the custom backward returns, and nothing flows through the forward's
    own ops (their outputs' only reader is that op, which hands them no gradient)."""
    trace, scope = lazy.context_entry()
    ctx = FunctionCtx()
    wants = [x is not None and x.requires_grad_flag for x in inputs]
    outs = _unpack(cls.forward(ctx, *inputs), "forward")
    if not (trace.job.is_train and any(wants) and autograd.is_grad_enabled()):
        return _pack(outs)
    name = cls.__name__
    present = [k for k, o in enumerate(outs) if o is not None]
    wanting = [i for i, w in enumerate(wants) if w]
    out_values = [lazy._lazy_value(trace, scope, outs[k]) for k in present]
    in_values = [lazy._lazy_value(trace, scope, inputs[i]) for i in wanting]
    values = out_values + in_values
    boundary = trace.apply("tuple_identity", {}, values, values[0].placement)
    differentiable = {k: id(outs[k]) not in ctx._non_differentiable and outs[k].dtype.is_floating for k in present}
    like = {k: outs[k] for k in present}

    def rule(op, dys):
        with lazy.tracing(trace, scope):
            grads = [None] * len(outs)
            for j, k in enumerate(present):
                if not differentiable[k]:
                    continue
                dy = dys[j]
                if dy is None:  # no gradient reached this output: zeros (OneFlow 0.9 FunctionNode::Apply)
                    grads[k] = creation.zeros_like(like[k])
                else:
                    grads[k] = lazy._wrap(LazyValue(dy, trace), like[k], False)
            with autograd.no_grad():
                result = _unpack(cls.backward(ctx, *grads), "backward")
            if len(result) != len(inputs):
                raise RuntimeError("RuntimeError: function %s returned an incorrect number of gradients (expected %d, got %d)"
                                   % (name, len(inputs), len(result)))
            dxs = [None] * len(present)
            for i in wanting:
                g = result[i]
                if g is None:
                    raise RuntimeError("autograd.Function named %s's inputs[%d] requires grad but got None grad. "
                                       "Please use Tensor.detach() for this input." % (name, i))
                if tuple(g.shape) != tuple(inputs[i].shape):
                    raise RuntimeError("function %s returned a gradient of shape %s for inputs[%d], whose shape "
                                       "is %s" % (name, tuple(g.shape), i, tuple(inputs[i].shape)))
                dxs.append(lazy._lazy_value(trace, scope, g).blob)
            return dxs

    job = trace.job
    if not hasattr(job, "custom_grads"):
        job.custom_grads = {}
    job.custom_grads[boundary[0].blob.op.name] = rule
    results = list(outs)
    for j, k in enumerate(present):
        results[k] = lazy._wrap(boundary[j], outs[k], differentiable[k])
    return _pack(results)


# --- oneflow.autograd.grad ------------------------------------------------------------------------------------------
def _as_list(x, what):
    if x is None:
        return []
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        for i, t in enumerate(x):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("oneflow.autograd.grad: %s[%d] is a %s, not a Tensor" % (what, i, type(t).__name__))
        return list(x)
    raise TypeError("oneflow.autograd.grad: %s must be a Tensor or a sequence of Tensors, got %s"
                    % (what, type(x).__name__))


def grad(outputs, inputs, grad_outputs=None, retain_graph=False, create_graph=False):
    r"""Computes and returns the sum of gradients of outputs with respect to the inputs (OneFlow 0.9).

    Args:
        outputs (Sequence[Tensor]): Tensors of which the derivative will be computed.
        inputs (Sequence[Tensor]): Inputs w.r.t. which the derivative will be returned (and not accumulated
            into ``.grad``).
        grad_outputs (Sequence[Tensor], optional): The "vector" in the Jacobian-vector product, one per output.
            None for scalar outputs. Defaults to None.
        retain_graph (bool, optional): If ``False``, the graph used to compute the grads is freed after the pass.
        create_graph (bool, optional): If ``True``, graph of the derivative will be constructed, allowing to
            compute higher order derivative products (`_global/higher_order.py`; implies retain_graph).

    Returns:
        Tuple(Tensor): the gradients for each of ``inputs`` (None for an input no gradient reached).
    """
    if lazy.tracer_active():
        raise RuntimeError("oneflow.autograd.grad is not supported inside nn.Graph.build(); call loss.backward()")
    outputs = _as_list(outputs, "outputs")
    inputs = _as_list(inputs, "inputs")
    grad_outputs = _as_list(grad_outputs, "grad_outputs")
    if create_graph:  # OneFlow 0.9: create_graph implies retain_graph
        retain_graph = True
    if not inputs:  # OneFlow 0.9 (`autograd.cpp: Grad`): no inputs is a backward into the leaves
        if create_graph:
            backward_recorded(outputs, grad_outputs or None)
        else:
            _run_backward(outputs, grad_outputs or None, retain_graph)
        return ()
    if any(x is None for x in inputs) or not all(x.requires_grad_flag for x in inputs):
        raise RuntimeError("All input tensors `.requires_grad` should be true")
    if grad_outputs and len(grad_outputs) != len(outputs):
        raise RuntimeError("got %d tensors and %d gradients" % (len(outputs), len(grad_outputs)))
    seeds = _seeds(outputs, grad_outputs)
    if create_graph:
        got = higher_order.run([(t._edge(), g) for t, g in zip(outputs, seeds)], inputs)
        return tuple(_onto_layout_of(got.get(id(x)), x) for x in inputs)
    roots = [(t._edge(), g._value) for t, g in zip(outputs, seeds)]
    captured = [[] for _ in inputs]
    leaf_slot = {}
    hooks = []
    for i, x in enumerate(inputs):
        if x._node is None:
            leaf_slot.setdefault(id(x), []).append(i)
        else:  # a non-leaf: its gradient is caught on its node's output, while this pass runs
            node, index = x._node, x._out_index
            hook = _catcher(captured[i])
            node.add_output_hook(index, hook, terminal=True)
            hooks.append((node, index, hook))

    def accumulate_leaf(leaf, value):  # leaves are not accumulated into: only the inputs' gradients are kept
        slots = leaf_slot.get(id(leaf), ())
        if slots:
            # an input leaf's gradient as its hooks leave it (OneFlow 0.9 captures `current_grad_value()`, which
            # applies the tensor's hooks: core/autograd/autograd_engine.cpp:417-423, autograd_meta.cpp:77-84)
            value = leaf._hooked_grad(value)
        for i in slots:
            captured[i].append(value)

    try:
        autograd.backward(roots, accumulate_leaf, retain_graph)
    finally:
        for node, index, hook in hooks:
            node.output_hooks[index].remove(hook)
    result = []
    for x, got in zip(inputs, captured):
        if not got:
            result.append(None)
            continue
        v = autograd.box(autograd.add(got), x._value.placement, x._value.sbp, label="gradient")
        v = type(v)(v.meta, v.placement, v.sbp, [p.copy() for p in v.pieces])  # may share memory with the pass's
        result.append(wrap(v, x._placement, x._device))
    return tuple(result)


def _seeds(outputs, grad_outputs):
    """The gradient Tensor each output starts from (OneFlow 0.9 `CheckAndInitOutGrads`)."""
    seeds = []
    for i, t in enumerate(outputs):
        if not t.requires_grad_flag:
            # OneFlow 0.9's text as it is (api/python/autograd/autograd.cpp CheckAndInitOutGrads)
            raise RuntimeError("\nRuntimeError: element %d of tensors does not require grad and does not have a "
                               "grad_fn" % i)
        g = grad_outputs[i] if grad_outputs else None
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("Grad can be implicitly created only for scalar outputs")
            g = wrap(autograd.seed_gradient(t._value), t._placement, t._device)
        else:
            if tuple(g.shape) != tuple(t.shape):
                raise RuntimeError("out_grad's shape must be same as output's (%s vs %s)"
                                   % (_shape_str(t.shape), _shape_str(g.shape)))
            if g.dtype != t.dtype:
                g = g.to(t.dtype)
        seeds.append(g)
    return seeds


def _onto_layout_of(g, x):
    """Gradient `g` (recorded) on `x`'s placement and SBP (a partial sum of data-parallel ranks made whole)."""
    if g is None or not x.is_global:
        return g
    if g.placement != x.placement or tuple(g.sbp) != tuple(x.sbp):
        g = g.to_global(placement=x.placement, sbp=x.sbp)
    return g


def backward_recorded(tensors, grad_tensors=None):
    """`backward(create_graph=True)`: the leaves' `.grad` get gradients that are themselves recorded."""
    if lazy.tracer_active():
        raise RuntimeError("backward(create_graph=True) is not supported inside nn.Graph.build()")
    seeds = _seeds(tensors, grad_tensors)
    got = higher_order.run([(t._edge(), g) for t, g in zip(tensors, seeds)])
    for leaf, g in got.values():
        g = _onto_layout_of(g, leaf)
        leaf.grad = g if leaf.grad is None else leaf.grad + g


def _catcher(sink):
    def catch(value):
        sink.append(value)

    return catch


def _shape_str(shape):
    return "(" + ",".join(str(d) for d in shape) + ")"
