"""Applying one registered op to Tensors: the entry point every functional op (and module) goes through.

`apply_op(op_type, inputs, attrs)` checks that the inputs are all local or all global on one placement, runs the
op eagerly (`runtime/global_eager.py`: the op's declared SBP signatures choose the output layout, boxing moves
inputs as needed), and records an autograd node when an input requires a gradient and the op has a grad rule.

While an `nn.Graph` traces its `build`, the same entry points add the op to the graph's job instead (`lazy.py`):
this is the one place where eager and graph execution part.
"""
from oneflow_compat.framework import client_mode
from oneflow_compat.ops import registry
from oneflow_compat.runtime import autograd, context, global_eager
from oneflow_compat._global import autocast_mode, device_keys, lazy
from oneflow_compat._global import grad_zeroing as _grad_zeroing
from oneflow_compat._global.op_names import ONEFLOW_OP_NAMES
from oneflow_compat._global.tensor import Tensor, wrap

_BOUND, _PROCESS = context.THREAD, context.PROCESS  # `_BOUND.context or _PROCESS` is `context.get()` inline
_GLOBAL_API = client_mode.GLOBAL
_new = object.__new__
grad_mode = autograd.grad_mode()  # this thread's gradient mode (a thread-local stack)
_AUTOCAST = autocast_mode.STATE  # this thread's autocast state: inside an enabled scope ops cast their inputs


def _autocast_cast(t, dtype):
    return apply_op_list("cast", [t], {"dtype": dtype})[0]


def _where(inputs, op_type):
    first = inputs[0]
    for i, t in enumerate(inputs[1:], 1):
        if t.is_global != first.is_global:
            raise RuntimeError("op '%s': expected all tensors to be global or all local, but input 0 is %s and "
                               "input %d is %s" % (op_type, "global" if first.is_global else "local", i,
                                                   "global" if t.is_global else "local"))
        if first.is_global and t.placement != first.placement:
            words = ("Expected all tensors to be on the same placement, but found at least two placements, %r "
                     "(positional 0) and %r (positional %d)!" % (first.placement, t.placement, i))
            if lazy.tracer_active():  # the lazy interpreter's words (lazy_op_interpreter.cpp @ v0.9.0)
                raise PlacementMixError("Lazy nn.Graph name: %s encountered ERROR in module/op_name: %s. %s Please "
                                        "use tensor.to_global() to synchronize all the input with the same "
                                        "placement." % (lazy.current().job.name, op_type, words))
            raise PlacementMixError("%s (op '%s')" % (words, op_type))
    return first


class PlacementMixError(RuntimeError, ValueError):
    """Inputs on two placements: a RuntimeError as OneFlow 0.9's (global_tensor_infer_cache.cpp,
    CheckInputParallelDescIdentical), a ValueError as this project raised before."""


# OneFlow 0.9's functors that move a 0-d CPU tensor onto the other operand's device before the op
# (CastDeviceForCPUScalarTensor, functional/impl/binary_functor.cpp @ v0.9.0): AddFunctor, MulFunctor, DivFunctor and
# InplaceDivFunctor, and every functor built on BinaryFunctor / BinaryFloatFunctor / InplaceableBinaryFunctor
# (binary_functor.h): sub, pow, atan2, floor division, fmod, the comparisons, logical and (or / xor / trunc division
# are composed of these here); and MaximumFunctor / MinimumFunctor (math_functor.cpp). Every other op refuses the
# mix. The in-place forms that may not move the tensor written (`cpu_scalar.add_(cuda_x)`, `x.mul_(cpu_scalar)`) are refused before they get here
# (`tensor_methods._inplace_binary`).
_CPU_SCALAR_MOVES = frozenset(("add", "subtract", "multiply", "divide", "maximum", "minimum", "pow", "atan2",
                               "floordiv", "broadcast_fmod", "floor_mod", "equal", "not_equal", "greater",
                               "greater_equal", "less", "less_equal", "logical_and"))


def _one_device(op_type, inputs, moves=None):
    """Local inputs on two devices (two types, or two indices of one type: cuda:0 and cuda:1; the devices the user
    named: "cuda" tensors that run on the CPU where no GPU is usable are refused alike). OneFlow 0.9 compares every
    input's device with input 0's (local_tensor_infer_cache.cpp, CheckInputDeviceIdentical; its words), after a binary op of
    `_CPU_SCALAR_MOVES` (`moves`: whether this op is one, where the caller says) moved a 0-d CPU operand onto the
    other's device. Returns the inputs to run."""
    if len(inputs) == 2 and (op_type in _CPU_SCALAR_MOVES if moves is None else moves):
        x, y = inputs
        if not y._value.meta.shape and device_keys.type_of(y._device) == "cpu":
            return [x, _moved(y, x._device)]
        if not x._value.meta.shape and device_keys.type_of(x._device) == "cpu":
            return [_moved(x, y._device), y]
    first = inputs[0]
    for i, t in enumerate(inputs):
        if t._device != first._device:
            words = ("Expected all tensors to be on the same device, but found at least two devices, %s (positional "
                     "0) and %s (positional %d)!" % (first.device, t.device, i))
            if lazy.tracer_active():  # the lazy interpreter's words (lazy_op_interpreter.cpp @ v0.9.0)
                raise RuntimeError("Lazy nn.Graph name: %s encountered ERROR in module/op_name: %s. %s Please use "
                                   "tensor.to() to synchronize all the input with the same device."
                                   % (lazy.current().job.name, op_type, words))
            raise RuntimeError("%s (op '%s')" % (words, op_type))
    return inputs


def binary_operands(op_type, x, y, moves=True):
    """Two local operands of a binary function before it broadcasts or casts them (`functional._tensor_pair`): a
    0-d CPU one moved onto the other's device (`moves`: the functors of `_CPU_SCALAR_MOVES`), else two devices
    refused with the op's words."""
    if x._device == y._device or x._placement is not None or y._placement is not None:
        return x, y
    return _one_device(op_type, [x, y], moves)


def _moved(t, device):
    if lazy.tracer_active():  # a graph's input: the traced op reads it where it lives (a host -> device move)
        return t
    from oneflow_compat._global import device_moves  # (creation, which it uses, builds on this module)

    return device_moves.moved(t, device)


def apply_op(op_type, inputs, attrs=None, requires_grad=None):
    """Runs op `op_type` on `inputs` (Tensors) with `attrs`; returns a Tensor, or a list for several outputs."""
    outs = apply_op_list(op_type, inputs, attrs, requires_grad)
    return outs[0] if len(outs) == 1 else outs


def apply_op_list(op_type, inputs, attrs=None, requires_grad=None):
    # the checks of every call, written for speed (an eager op costs a few µs): all Tensors, all local or all
    # global on one placement (the placement objects are compared only where they are not the same object); the
    # context looked up once (a simulated rank's, in its thread: `context.get()` inline)
    first = inputs[0]
    if type(first) is not Tensor and not isinstance(first, Tensor):
        raise TypeError("op '%s' expects Tensors as inputs, got %s" % (op_type, type(first).__name__))
    placement = first._placement
    n = len(inputs)
    if n > 1:
        device = first._device
        mixed = False
        for t in inputs:
            if type(t) is not Tensor and not isinstance(t, Tensor):
                raise TypeError("op '%s' expects Tensors as inputs, got %s" % (op_type, type(t).__name__))
            other = t._placement
            if other is not placement and (other is None or placement is None or other != placement):
                _where(inputs, op_type)
            if t._device is not device and t._device != device:  # (device type strings: mostly the same object)
                mixed = True
        if mixed and placement is None:
            inputs = _one_device(op_type, inputs)
            first = inputs[0]
    ctx = _BOUND.context or _PROCESS
    if _AUTOCAST.enabled:  # flow.autocast("cuda"): CUDA inputs cast as OneFlow 0.9's rules say (autocast_mode.py);
        # also while an nn.Graph traces its build inside a scope opened eagerly (0.9's TensorAutoCastProcessor runs
        # for lazy ops too: functional/tensor_processor.cpp:182-243 @ v0.9.0 checks the autocast state alone)
        inputs = autocast_mode.cast_inputs(op_type, inputs, _autocast_cast)
        first = inputs[0]
    if ctx.graph_traces:
        return lazy.apply(op_type, inputs, attrs)
    if n == 2:  # (no list comprehension for the commonest arities: it is a call of its own)
        values = [first._value, inputs[1]._value]
    elif n == 1:
        values = [first._value]
    else:
        values = [t._value for t in inputs]
    compiled = global_eager.compiled_op(op_type, attrs, values, plans=ctx.eager_plans)
    device = first._device
    if device not in device_keys.PLAIN:  # "cuda:K": another device than the process's own, current while the op runs
        with device_keys.current(device):
            outs = compiled.run_lock_free(values) if compiled.lock_free else global_eager.run_compiled(compiled,
                                                                                                    values)
    else:
        outs = compiled.run_lock_free(values) if compiled.lock_free else global_eager.run_compiled(compiled, values)
    if len(outs) == 1:  # (`wrap`, inlined for the common case)
        if ctx.api[0] is not _GLOBAL_API:
            client_mode.use(client_mode.GLOBAL, "creating a flow.Tensor")
        t = _new(Tensor)
        t._value = outs[0]
        if placement is not None:
            t._placement = placement
        if device != "cpu":
            t._device = device
        tensors = [t]
    else:
        tensors = [wrap(v, placement, device) for v in outs]
    if requires_grad is None:
        requires_grad = False
        if grad_mode.stack[-1]:
            for t in inputs:
                if t.requires_grad_flag:
                    requires_grad = True
                    break
    if requires_grad and registry.get(op_type).grad is not None:
        node = (autograd.OpNode if device in device_keys.PLAIN else _OnDeviceNode)(
            op_type, compiled.attrs, values, outs, [t._edge() for t in inputs], oneflow_backward_name(op_type, values),
            compiled)
        if device not in device_keys.PLAIN:
            node.device_key = device
        for k, t in enumerate(tensors):
            if t._value.meta.dtype.is_floating:
                t.requires_grad_flag, t._node, t._out_index = True, node, k
        if autograd.SAVED_TENSORS_HOOKS:
            _pack_saved(node, inputs)
    return tensors


class _OnDeviceNode(autograd.OpNode):
    """The node of an op on "cuda:K", another device than the process's own: its gradient is computed with that
    GPU current, where its forward ran and its saved inputs live (`device_keys.current`)."""

    device_key = None

    def backward(self, dys):
        with device_keys.current(self.device_key):
            return autograd.OpNode.backward(self, dys)


def _pack_saved(node, inputs):
    """saved_tensors_hooks (api-misc2): the node keeps pack(input) for each input tensor (what this implementation's
    backward reads of the forward: its inputs); backward computes from what unpack returns. (The node's own
    references stay: higher-order gradients rebuild the history from them, and host memory is what the hooks
    would offload to.)"""
    pack, unpack = autograd.SAVED_TENSORS_HOOKS[-1]
    # the pack hook sees the tensors in the order OneFlow 0.9's gradient rule saves them: multiply and divide save
    # y before x (core/autograd/gradient_funcs/broadcast_binary_ops.cpp, BroadcastMul / BroadcastDiv)
    order = (1, 0) if len(inputs) == 2 and node.op_type in _SAVES_Y_FIRST else range(len(inputs))
    packed = [None] * len(inputs)
    for i in order:
        packed[i] = (inputs[i]._value.meta, pack(inputs[i]))
    node.packed = (packed, unpack)


_SAVES_Y_FIRST = frozenset(("multiply", "divide"))


def oneflow_backward_name(op_type, values):
    """The grad_fn name OneFlow 0.9 shows for this op: equal shapes are added with add_n, others with
    broadcast_add."""
    if op_type == "add":
        same = len(values) == 2 and values[0].meta.shape == values[1].meta.shape
        return ("add_n" if same else "broadcast_add") + "_backward"
    return ONEFLOW_OP_NAMES.get(op_type, op_type) + "_backward"


def make_source(op_type, attrs, like):
    """Runs an op without inputs (a constant) on the layout of tensor `like`'s placement."""
    if lazy.tracer_active():
        return lazy.apply_source(op_type, attrs, like)
    outs = global_eager.run_op(op_type, attrs, [], placement=like._value.placement)
    return [Tensor._make(v, like._placement, None, like._device) for v in outs]


def backward(tensors, grad_tensors=None, retain_graph=False):
    """`flow.autograd.backward`: backpropagates from `tensors` (every rank calls it for global tensors)."""
    grad_tensors = grad_tensors or [None] * len(tensors)
    if lazy.tracer_active():
        for t, g in zip(tensors, grad_tensors):
            lazy.backward(t, g, retain_graph)
        return
    roots = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not t.requires_grad_flag:  # OneFlow 0.9's text as it is (api/python/autograd/autograd.cpp)
            raise RuntimeError("\nRuntimeError: element %d of tensors does not require grad and does not have a "
                               "grad_fn" % i)
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("Grad can be implicitly created only for scalar outputs")  # OneFlow 0.9's words
            with device_keys.current(t._device if t._placement is None else "cpu"):  # (on the tensor's GPU)
                gv = autograd.seed_gradient(t._value)
        else:
            if tuple(g.shape) != tuple(t.shape):
                raise RuntimeError("backward: gradient of shape %s does not fit the tensor's shape %s"
                                   % (tuple(g.shape), tuple(t.shape)))
            gv = g._value
        roots.append((t._edge(), gv))
    # one root (a loss): the gradient buckets' check may carry its partial sums, so that its numpy() sends nothing
    root_value = tensors[0]._value if len(tensors) == 1 and tensors[0]._placement is not None else None
    autograd.backward(roots, lambda leaf, value: leaf._accumulate_grad(value), retain_graph, _leaf_layout,
                      root_value, _grad_zeroing.leaf_gradient)


def _leaf_layout(leaf):
    v = leaf._value
    return v.placement, v.sbp
