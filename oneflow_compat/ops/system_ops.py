"""Ops the framework itself inserts: inputs, variables, boxing, view casts, watches, and the training machinery
(loss seeds, gradient scaling, learning rate, optimizer updates, the step counter)."""
import functools

import numpy as np

from oneflow_compat.backend import devices, step_scalars
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import array as array_k
from oneflow_compat.kernels import elementwise as E
from oneflow_compat.kernels import norm as norm_k
from oneflow_compat.kernels import cuda_blas, cuda_optim
from oneflow_compat.kernels import linalg as linalg_k
from oneflow_compat.kernels import optim as optim_k
from oneflow_compat.kernels import reduce as reduce_k
from oneflow_compat.ops import host_step, sbp_rules, split_norms, transitions
from oneflow_compat.ops.registry import OpDef, apply, register

PASSTHROUGH = "passthrough"  # sbp marker: the op reads its input in whatever layout it was produced


def _same_meta(op):
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic) for x in op.inputs[:1]]


# --- sources ---------------------------------------------------------------------------------------------------
def _input_sbp(op):
    if op.attrs.get("sbp") is not None:  # an eager global value enters its one-op job as it lies
        return [((), (op.attrs["sbp"],))]
    ax = op.attrs["batch_axis"]
    if ax is None:
        return [((), (S.B,))]
    return [((), (S.S(ax),)), ((), (S.B,))]


register(OpDef("input", infer=lambda op: [TensorMeta(op.attrs["shape"], op.attrs["dtype"],
                                                     op.attrs["kind"] != "numpy")],
               sbp=_input_sbp, role="input"))


def _var_meta(op):
    spec = op.attrs["spec"]
    return [TensorMeta(spec.shape, spec.dtype)]


register(OpDef("variable", infer=_var_meta, sbp=lambda op: [((), (op.attrs["spec"].sbp,))], role="variable"))


# --- boxing and view casts -----------------------------------------------------------------------------------
# The transition table (`ops/transitions.py`) plans and prices every move; its executors need the comm, so the
# runtime supplies the function (`runtime/boxing.py`, `hook`).
register(OpDef("boxing", infer=_same_meta, collective=True, boxing=True, runtime_hook="boxing"))


def _cast_to_mirrored_meta(op):
    x = op.inputs[0]
    n = op.placement.parallel_num
    shape = x.shape if _broadcast_to_mirrored(x) or n == 1 else S.local_shape(x.shape, S.S(0), 0, n)
    return [TensorMeta(shape, x.dtype, True)]


def _broadcast_to_mirrored(x):
    """Variables reach every device whole (legacy: they stay consistent and are cast to mirrored); every other
    consistent blob is split along axis 0, each device taking its rows, as placeholder inputs are."""
    return x.op.defn.role == "variable" or not x.shape


def _cast_to_mirrored_sbp(op, ins):
    if op.placement.parallel_num == 1:
        return [S.B], [S.M]
    return [S.B if _broadcast_to_mirrored(op.inputs[0]) else S.S(0)], [S.M]


def _cast_to_mirrored_grad(op, dys):
    return [apply("cast_from_mirrored", [dys[0]], {"grad_of": op})]


def _cast_from_mirrored_meta(op):
    x = op.inputs[0]
    sbp = op.attrs.get("sbp", S.S(0))
    if "grad_of" in op.attrs:
        fwd_in = op.attrs["grad_of"].inputs[0]
        return [TensorMeta(fwd_in.shape, x.dtype, fwd_in.is_dynamic)]
    n = op.placement.parallel_num
    shape = x.shape if sbp == S.P or not x.shape else (x.shape[0] * n,) + tuple(x.shape[1:])
    return [TensorMeta(shape, x.dtype, x.is_dynamic)]


def _cast_from_mirrored_sbp(op, ins):
    if "grad_of" in op.attrs:
        fwd = op.attrs["grad_of"]
        s = fwd.sbp_in[0]
        return [S.M], [S.P if s == S.B else s]
    return [S.M], [op.attrs.get("sbp", S.S(0))]


def _cast_from_mirrored_grad(op, dys):
    return [apply("cast_to_mirrored", [dys[0]])]


register(OpDef("cast_to_mirrored", infer=_cast_to_mirrored_meta, kernel=array_k.identity,
               mirrored_sbp=_cast_to_mirrored_sbp, grad=_cast_to_mirrored_grad, view_cast="mirrored"))
register(OpDef("cast_from_mirrored", infer=_cast_from_mirrored_meta, kernel=array_k.identity,
               mirrored_sbp=_cast_from_mirrored_sbp, grad=_cast_from_mirrored_grad, view_cast="consistent"))


def _identity_grad(op, dys):
    return [apply("identity", [dys[0]])]


register(OpDef("identity", infer=_same_meta, kernel=array_k.identity, sbp=sbp_rules.unary_linear, rowwise=True,
               grad=_identity_grad))


# --- watch ---------------------------------------------------------------------------------------------------
# Its function hands the full logical value to a Python handler, so the runtime builds it (runtime/watch.py).
register(OpDef("watch", infer=lambda op: [], sbp=PASSTHROUGH, stateful=True, collective=True, runtime_hook="watch"))


# --- training machinery --------------------------------------------------------------------------------------
register(OpDef("fill_like", infer=_same_meta, kernel=array_k.fill_like,
               kernel_attrs=lambda op: {"value": op.attrs["value"]},
               sbp=lambda op: sbp_rules.shape_only(sbp_rules.unary(op), 0)))


def _add_n_sbp(op):
    n, nd = len(op.inputs), len(op.outputs[0].shape)
    return [((S.S(i),) * n, (S.S(i),)) for i in range(nd)] + [((S.B,) * n, (S.B,)), ((S.P,) * n, (S.P,))]


register(OpDef("add_n", infer=_same_meta, kernel=E.add_n, sbp=_add_n_sbp,
               grad=lambda op, dys: [dys[0]] * len(op.inputs), fresh_output=True))


register(OpDef("scalar_mul", infer=_same_meta, kernel=E.scalar_mul, kernel_attrs=lambda op: {"value": op.attrs["value"]},
               rowwise=True,
               sbp=sbp_rules.unary_linear,
               grad=lambda op, dys: [apply("scalar_mul", [dys[0]], {"value": op.attrs["value"]})], fresh_output=True))


def _by_scalar_tensor_sbp(op):
    nd = len(op.inputs[0].shape)
    return ([((S.S(i), S.B), (S.S(i),)) for i in range(nd)] + [((S.B, S.B), (S.B,)), ((S.P, S.B), (S.P,))])


register(OpDef("mul_by_scalar_tensor", infer=_same_meta, kernel=E.mul_by_scalar_tensor, sbp=_by_scalar_tensor_sbp,
               fresh_output=True))
register(OpDef("div_by_scalar_tensor", infer=_same_meta, kernel=E.div_by_scalar_tensor, sbp=_by_scalar_tensor_sbp,
               fresh_output=True))


register(OpDef("axis0_count", infer=lambda op: [TensorMeta((1,), op.inputs[0].dtype if op.inputs[0].dtype.is_floating
                                                           else dtypes.float32)],
               kernel=reduce_k.axis0_count))


register(OpDef("reduce_sum_square", infer=lambda op: [TensorMeta((1,), op.inputs[0].dtype)],
               kernel=optim_k.sum_of_squares,
               sbp=lambda op: [((S.S(i),), (S.P,)) for i in range(len(op.inputs[0].shape))] + [((S.B,), (S.B,))]))


register(OpDef("global_norm_clip_scale", infer=_same_meta, kernel=optim_k.global_norm_clip_scale,
               kernel_attrs=lambda op: {"clip_norm": op.attrs["clip_norm"],
                                        "formula": op.attrs.get("formula", "legacy")},
               sbp=sbp_rules.all_broadcast))


def _two_same_sbp(op):
    nd = len(op.inputs[0].shape)
    return [((S.S(i), S.S(i)), (S.S(i),)) for i in range(nd)] + [((S.B, S.B), (S.B,))]


register(OpDef("add_regularization", infer=_same_meta, kernel=optim_k.add_regularization,
               kernel_attrs=lambda op: {"l1": op.attrs["l1"], "l2": op.attrs["l2"]}, sbp=_two_same_sbp))


def learning_rate_key(schedule, step_blob):
    """The step-scalar key of a schedule's rate at a step counter: the updates reading it share one slot."""
    return ("learning rate", id(schedule), step_blob.key())


def _lr_build(op, dev):
    sched = op.attrs["scheduler"]
    xp = dev.xp
    cache = {}
    step_now = host_step.reader(op.inputs[0])  # the step from its host copy: no wait for the device
    scalars = step_scalars.for_device(xp, dev.index)
    current = host_step.current(op.inputs[0])
    if scalars is not None and current is not None:
        # on a device: a step scalar, uploaded with the call's other scalars (no copy of its own, not frozen in a
        # CUDA graph); the op's (1,) output is a view of it
        rate = scalars.add(np.float32, lambda: sched.lr_at(current()), key=learning_rate_key(sched, op.inputs[0])
                           ).reshape(1)
        return lambda step: rate

    def lr(step):
        t = step_now(step)
        v = cache.get(t)
        if v is None:
            v = cache[t] = xp.asarray([sched.lr_at(t)], dtype=np.float32)
            if len(cache) > 64:
                cache.clear()
                cache[t] = v
        return v

    return lr


register(OpDef("learning_rate", infer=lambda op: [TensorMeta((1,), dtypes.float32)], build=_lr_build,
               sbp=sbp_rules.all_broadcast))


def _hinted_sig(op):
    return [(tuple(op.in_hints[i] for i in range(len(op.inputs))), ())]


def input_owned(op, index):
    """Whether `op` may overwrite input `index`: a fresh array (its producer declares `fresh_output`) that nothing
    else reads; or, for an in-place op running once over shared replicas, the one array a boxing made for them
    (a data-parallel gradient's all-reduce in one process)."""
    x = op.inputs[index]
    consumers = sum(1 for o in op.job.ops for y in o.inputs if y.key() == x.key())
    if x.op.defn.boxing:
        fresh = op.defn.in_place and transitions.makes_shared_fresh_array(x.op.attrs)
    else:
        fresh = x.op.defn.fresh_output
    return fresh and consumers == 1


def _update_build(op, dev):
    opt, wd, xp = op.attrs["optimizer"], op.attrs["weight_decay"], dev.xp
    scale = op.attrs.get("grad_scale", 1.0)
    owned = input_owned(op, 1)
    step_now = host_step.reader(op.inputs[3])

    n_states = op.attrs.get("n_states", len(op.inputs) - 4)
    indexed = op.attrs.get("indexed_slices", False)
    if indexed:
        return _indexed_slices_update(op, dev, opt, wd, scale, step_now, n_states)

    on_device = _device_update(op, dev, opt, wd, scale, owned, n_states)
    if on_device is not None:
        return on_device

    def update(w, g, lr, step, *rest):
        # the learning rate and step from the step's host copy (the `learning_rate` op's value, not read back)
        t = step_now(step)
        states = list(rest[:n_states])
        kwargs = dict(lr=float(np.float32(opt.lr_scheduler.lr_at(t))), step=t, weight_decay=wd, grad_scale=scale,
                      grad_owned=owned)
        if len(rest) == n_states:
            opt.update_scaled(xp, w, g, states, **kwargs)
        elif xp is np:
            if rest[n_states][0] == 0:  # dynamic loss scaling skips a step whose gradients overflowed
                opt.update_scaled(xp, w, g, states, **kwargs)
        else:  # on a device the skip is decided there: update, then put the old values back if it overflowed
            saved = [a.copy() for a in [w] + states]
            opt.update_scaled(xp, w, g, states, **kwargs)
            optim_k.undo_if_nonfinite(xp, rest[n_states], [w] + states, saved)

    return update


def _device_update(op, dev, opt, wd, scale, owned, n_states):
    """The update on a device as one launch (`Optimizer.update_on_device`, kernels/cuda_optim.py) reading its rate
    from a step scalar computed on the host at each call's start (backend/step_scalars.py): nothing passed by
    value, so a captured CUDA graph updates with each call's rate. None where that does not apply (host arrays, no
    device rule for this optimizer, dynamic loss scaling's skip input, no step scalars where the op runs)."""
    xp = dev.xp
    device_rate = getattr(opt, "device_rate", None)  # (an optimizer of another API may not have one)
    if xp is np or device_rate is None or device_rate(1.0, 0) is None or len(op.inputs) != 4 + n_states:
        return None
    scalars = step_scalars.for_device(xp, dev.index)
    step_now = host_step.current(op.inputs[3])
    if scalars is None or step_now is None:
        return None

    def rate_now():
        t = step_now()
        return opt.device_rate(float(np.float32(opt.lr_scheduler.lr_at(t))), t)

    # (one slot for every update of this optimizer at this step counter: the rate depends on them alone)
    rate = scalars.add(np.float32, rate_now, key=("device rate", id(opt), op.inputs[3].key()))

    def update(w, g, lr, step, *states):
        if not opt.update_on_device(xp, w, g, list(states), rate, weight_decay=wd, grad_scale=scale,
                                    grad_owned=owned):
            t = step_now()
            opt.update_scaled(xp, w, g, list(states), lr=float(np.float32(opt.lr_scheduler.lr_at(t))), step=t,
                              weight_decay=wd, grad_scale=scale, grad_owned=owned)

    return update


def _indexed_slices_update(op, dev, opt, wd, scale, step_now, n_states):
    """The update of an indexed-slices variable (passes/optimizer_pass.py): only the rows its gather read — of this
    device's piece, when the variable is split along axis 0 — are updated, with their optimizer states."""
    xp = dev.xp
    offset, rows_here = 0, op.inputs[0].shape[0]
    if S.splits_axis(dev.sbp_in[0], 0) and dev.parallel_num > 1:
        offset, stop = S.piece_range(op.inputs[0].shape, dev.sbp_in[0], dev.index, dev.parallel_num, 0)
        rows_here = stop - offset

    def update(w, g, lr, step, *rest):
        t = step_now(step)
        states = list(rest[:n_states])
        skip, indices = rest[n_states:-1], rest[-1]
        if skip and int(devices.to_host(skip[0]).reshape(-1)[0]) != 0:
            return  # dynamic loss scaling: this step's gradients overflowed
        rows = np.unique(devices.to_host(indices).astype(np.int64).reshape(-1)) - offset
        rows = xp.asarray(rows[(rows >= 0) & (rows < rows_here)])
        w_rows, g_rows = w[rows], g[rows]
        state_rows = [s[rows] for s in states]
        opt.update_scaled(xp, w_rows, g_rows, state_rows, lr=float(np.float32(opt.lr_scheduler.lr_at(t))), step=t,
                          weight_decay=wd, grad_scale=scale, grad_owned=True)
        w[rows] = w_rows
        for s, s_rows in zip(states, state_rows):
            s[rows] = s_rows

    return update


register(OpDef("optimizer_update", infer=lambda op: [], build=_update_build, sbp=_hinted_sig, in_place=True))


# --- the update of a split variable by an optimizer reading its whole norms (LARS, LAMB; the leftovers helper) -----
# Same inputs as `optimizer_update` (variable, gradient, learning rate, step, states, [skip]); one step over every
# local device: each piece runs the optimizer's first half (`split_update`, a generator yielding the arrays it
# measures), the whole variable's norms come from every piece (ops/split_norms.py: one small all-reduce among the
# placement's processes), then each piece finishes. Replicated inputs that are one array in this process (LAMB's
# beta_t powers) are advanced once: the other devices read a copy of their value before the step.
def _whole_norm_update_build(op, session):
    rt = session.runtime
    local = rt.local_indices(op.placement)
    k = len(local)
    if k == 0:  # the variable lives on other processes only
        return lambda *pieces: ()
    opt, wd = op.attrs["optimizer"], op.attrs["weight_decay"]
    scale = op.attrs.get("grad_scale", 1.0)
    n_states = op.attrs.get("n_states", len(op.inputs) - 4)
    step_now = host_step.reader(op.inputs[3])
    xp = rt.xp(op.placement)
    placement, sbp = op.placement, op.sbp_in[0]

    def update(*pieces):
        per_input = [list(pieces[i * k:(i + 1) * k]) for i in range(len(op.inputs))]
        skip = per_input[4 + n_states] if len(op.inputs) > 4 + n_states else None
        if skip is not None and int(devices.to_host(skip[0]).reshape(-1)[0]) != 0:
            return  # dynamic loss scaling: this step's gradients overflowed
        t = step_now(per_input[3][0])
        lr = float(np.float32(opt.lr_scheduler.lr_at(t)))
        states = [per_input[4 + j] for j in range(n_states)]
        for column in states:  # one shared array: the first device advances it, the others read its old value
            seen = set()
            for d in range(k):
                if id(column[d]) in seen:
                    column[d] = column[d].copy()
                seen.add(id(column[d]))
        runs = []
        for d in range(k):
            g = per_input[1][d]
            if scale != 1.0:
                g = g * g.dtype.type(scale)
            runs.append(opt.split_update(xp, per_input[0][d], g, [c[d] for c in states], lr=lr, step=t,
                                         weight_decay=wd))
        split_norms.run_updates(runs, lambda arrays: split_norms.whole_norms(rt.comm, placement, sbp, local, arrays))

    return update


register(OpDef("optimizer_update_whole_norms", infer=lambda op: [], in_place=True, collective=True,
               build_collective=_whole_norm_update_build, sbp=_hinted_sig))


def _increment_build(op, dev):
    spec = host_step.counter_spec(op.inputs[0])
    follows = spec is not None and dev.index == dev.session.runtime.local_indices(op.placement)[0]
    scalars = step_scalars.for_device(dev.xp, dev.index)
    if scalars is not None:
        # on a device the host copy follows after the call's steps ran (a captured CUDA graph runs no Python)
        if follows:
            scalars.after_call(lambda: host_step.advance(spec))
        return functools.partial(cuda_optim.increment, dev.xp)

    def increment(step):
        optim_k.increment(dev.xp, step)
        if follows:  # once per call, however many devices hold a copy
            host_step.advance(spec)

    return increment


register(OpDef("increment", infer=lambda op: [], build=_increment_build, sbp=sbp_rules.all_broadcast,
               in_place=True))


def _moving_average_sig(op):
    """The layouts its builder asked for (legacy batch normalization hints both B); otherwise (an eager or nn.Graph
    running statistic, `_global/nn_norms.py`) the statistic is read as the moving value lies: both split alike, or
    both broadcast."""
    if op.in_hints:
        return _hinted_sig(op)
    moving = op.inputs[0]
    held = moving.op.sbp_out[moving.index] if moving.op.sbp_out else None  # (inference runs producers first)
    if held is not None and (held == S.B or S.is_split(held) or (S.is_nd(held) and S.P not in held.sbps)):
        return [((held, held), ())]  # updated where it lies (on a mesh too): a boxed copy would take the update
    nd = len(moving.shape)
    return [((S.B, S.B), ())] + [((S.S(i), S.S(i)), ()) for i in range(nd)]


register(OpDef("moving_average_update", infer=lambda op: [], kernel=norm_k.moving_average_update,
               kernel_attrs=lambda op: {"momentum": op.attrs["momentum"]}, sbp=_moving_average_sig, in_place=True))


def _fill_like_tensor_sbp(op):
    nd = len(op.inputs[0].shape)
    return [((S.S(i), S.B), (S.S(i),)) for i in range(nd)] + [((S.B, S.B), (S.B,))]


register(OpDef("fill_like_tensor", infer=_same_meta,
               kernel=array_k.fill_like_tensor, sbp=_fill_like_tensor_sbp))


register(OpDef("count_nonfinite", infer=lambda op: [TensorMeta((1,), dtypes.float32)],
               kernel=optim_k.count_nonfinite,
               sbp=lambda op: [((S.S(i),), (S.P,)) for i in range(len(op.inputs[0].shape))] + [((S.B,), (S.B,))]))


def _loss_scale_update_build(op, dev):
    # the policy's state machine (`next_state`) as array operations, where the scale lives
    policy = op.attrs["policy"]
    return functools.partial(optim_k.loss_scale_update, dev.xp, multiplier=policy.multiplier,
                             increment_period=policy.increment_period)


register(OpDef("loss_scale_update", infer=lambda op: [], build=_loss_scale_update_build,
               sbp=sbp_rules.all_broadcast, in_place=True))


# --- SGD folded into the kernel that makes the gradient (passes/fusion.py) --------------------------------------
# Inputs: the variable, the producer's operands, the step counter, and the momentum state when momentum > 0; the
# learning rate comes from the optimizer's schedule at the step's host copy, as `optimizer_update` reads it. In
# place, and one step over every local device: where the producer's pieces are partial sums (the data-parallel
# gradient of a broadcast variable whose replicas are one array here), every device's piece is added into that one
# array, which makes the gradient's all-reduce unnecessary.
class _Operands:
    """The producer's view of the fused op: its inputs alone, for the producer's own SBP rule."""

    def __init__(self, inputs):
        self.inputs = inputs


def _fused_sgd_sbp(n_operands, product_sigs):
    def sigs(op):
        out = []
        for ins, (g,) in product_sigs(op, _Operands(op.inputs[1:1 + n_operands])):
            w = S.B if g == S.P else g
            out.append(((w,) + tuple(ins) + (S.B,) + ((w,) if op.attrs["momentum"] else ()), ()))
        return out
    return sigs


def _fused_sgd_on_device(op, session, n_operands, gradient, kernel, kernel_attrs):
    """On a device (one local device): the gradient made by its own kernel (`gradient(xp, operands, attrs)` ->
    (g, alpha)), then one launch applies w ← w − c·g (or the momentum step) with the rate read from a step scalar
    (kernels/cuda_optim.py's fused branch: c = lr·scale·alpha). None where that does not apply."""
    rt = session.runtime
    xp, local = rt.xp(op.placement), rt.local_indices(op.placement)
    if xp is np or len(local) != 1 or not hasattr(xp, "RawModule"):
        return None
    scalars = step_scalars.for_device(xp, local[0])
    step_now = host_step.current(op.inputs[1 + n_operands])
    if scalars is None or step_now is None:
        return None
    momentum, schedule, scale = op.attrs["momentum"], op.attrs["optimizer"].lr_scheduler, op.attrs["scale"]
    attrs = kernel_attrs(op)
    rate = scalars.add(np.float32, lambda: np.float32(schedule.lr_at(step_now())),
                       key=learning_rate_key(schedule, op.inputs[1 + n_operands]))
    product_update = None
    dtype = op.inputs[0].dtype.np
    if gradient is _matmul_gradient and not momentum and dtype in (np.float32, np.float64):
        # w ← w − c·op(a)·op(b) in ONE GEMM (alpha = −c and beta = 1 read from device memory: cuBLAS's device
        # pointer mode), as the host's fused update does (kernels/optim.py, blas.gemm with alpha −c, beta 1):
        # no gradient array, no update launch. c as the update kernel rounds it: float32(lr · float32(scale·alpha))
        c_scale = np.float32(scale * attrs["alpha"])
        t = dtype.type
        minus_c = scalars.add(dtype, lambda: t(-np.float32(np.float32(schedule.lr_at(step_now())) * c_scale)),
                              key=("minus lr times", float(c_scale)) + learning_rate_key(
                                  schedule, op.inputs[1 + n_operands]))
        one = scalars.add(dtype, lambda: t(1), key=("one",))
        transposes = (attrs["transpose_a"], attrs["transpose_b"])

        def product_update(w, a, b):
            a = a.T if transposes[0] else a
            b = b.T if transposes[1] else b
            return cuda_blas.gemm_update(xp, a, b, w, minus_c, one)

    def update_one(w, *rest):
        m = rest[-1] if momentum else None
        if n_operands == 1 and gradient is _reduce_sum_gradient:
            # a bias: its sum and update in the kernels of cuda_optim.bias_sgd (no CuPy reduction, no gradient
            # array: one launch for a dense bias, two for a convolution's), where the layout allows
            x = rest[0]
            layout = cuda_optim.bias_layout(x, attrs["axis"]) if x.dtype == w.dtype else None
            if layout is not None and layout[1] == w.size and cuda_optim.supported(w, x, *([m] if momentum else [])):
                cuda_optim.bias_sgd(xp, w, m, x, rate, layout, scale=scale, beta=momentum)
                return
        if product_update is not None and product_update(w, *rest[:2]):
            return
        g, alpha = gradient(xp, rest[:n_operands], attrs)
        if not cuda_optim.supported(w, g, *([m] if momentum else [])):
            lr = float(np.float32(schedule.lr_at(step_now())))
            kernel(xp, w, m, [rest[0] if n_operands == 1 else rest[:n_operands]], lr=lr, scale=scale,
                   momentum=momentum, **attrs)
        elif momentum:
            cuda_optim.momentum(xp, w, m, g.reshape(w.shape), rate, beta=momentum, scale=scale * alpha, fused=True)
        else:
            cuda_optim.sgd(xp, w, g.reshape(w.shape), rate, scale=scale * alpha, fused=True)

    return update_one


def _matmul_gradient(xp, operands, attrs):
    return linalg_k.matmul(xp, operands[0], operands[1], transpose_a=attrs["transpose_a"],
                           transpose_b=attrs["transpose_b"]), attrs["alpha"]


def _reduce_sum_gradient(xp, operands, attrs):
    return xp.sum(operands[0], axis=tuple(attrs["axis"])), 1.0


def _fused_sgd_build(n_operands, kernel, kernel_attrs, gradient=None):
    def build(op, session):
        if gradient is not None:
            on_device = _fused_sgd_on_device(op, session, n_operands, gradient, kernel, kernel_attrs)
            if on_device is not None:
                return on_device
        rt = session.runtime
        xp, k = rt.xp(op.placement), len(rt.local_indices(op.placement))
        momentum, schedule = op.attrs["momentum"], op.attrs["optimizer"].lr_scheduler
        step_now = host_step.reader(op.inputs[1 + n_operands])
        # partial products add up into one shared variable; any other layout updates each piece by its own device
        partial = op.sbp_in[0] == S.B and any(s != S.B for s in op.sbp_in[1:1 + n_operands])
        # partial products of operands split on their rows (the contracted or summed axis) are one product of the
        # whole operands when the pieces are row blocks of one array each
        stackable = partial and all(s == S.S(0) for s in op.sbp_in[1:1 + n_operands])
        attrs = dict(kernel_attrs(op), scale=op.attrs["scale"], momentum=momentum)

        rates = {}  # step -> learning rate

        def learning_rate(step_piece):
            t = step_now(step_piece)
            lr = rates.get(t)
            if lr is None:
                if len(rates) > 64:
                    rates.clear()
                lr = rates[t] = float(np.float32(schedule.lr_at(t)))
            return lr

        if k == 0:  # the variable lives on other processes only
            return lambda *pieces: ()
        if k == 1:
            def update_one(w, *rest):
                kernel(xp, w, rest[-1] if momentum else None, [rest[0] if n_operands == 1 else rest[:n_operands]],
                       lr=learning_rate(rest[n_operands]), **attrs)
            return update_one

        if stackable:  # (the fusion pass made sure the variable's pieces are one array: see its update rules)
            def update_stacked(*pieces):
                operands = [pieces[(1 + i) * k:(2 + i) * k] for i in range(n_operands)]
                wholes = [transitions.rows_of_one(o) for o in operands]
                if any(w is None for w in wholes):
                    sets = list(operands[0]) if n_operands == 1 else list(zip(*operands))
                else:
                    sets = [wholes[0] if n_operands == 1 else tuple(wholes)]
                kernel(xp, pieces[0], pieces[-1] if momentum else None, sets,
                       lr=learning_rate(pieces[(1 + n_operands) * k]), **attrs)
            return update_stacked

        def update(*pieces):
            per_input = [pieces[i * k:(i + 1) * k] for i in range(len(op.inputs))]
            ws, operands = per_input[0], per_input[1:1 + n_operands]
            ms = per_input[2 + n_operands] if momentum else [None] * k
            lr = learning_rate(per_input[1 + n_operands][0])
            groups = {}  # the devices whose pieces go into each distinct variable array
            for d in range(k):
                group = groups.setdefault(id(ws[d]), [])
                if partial or not group:
                    group.append(d)
            for group in groups.values():
                sets = [operands[0][d] if n_operands == 1 else tuple(o[d] for o in operands) for d in group]
                kernel(xp, ws[group[0]], ms[group[0]], sets, lr=lr, **attrs)
        return update
    return build


def _matmul_sgd_attrs(op):
    return {k: op.attrs[k] for k in ("transpose_a", "transpose_b", "alpha")}


register(OpDef("matmul_sgd_update", infer=lambda op: [], in_place=True, collective=True,
               build_collective=_fused_sgd_build(2, optim_k.matmul_sgd_update, _matmul_sgd_attrs, _matmul_gradient),
               sbp=_fused_sgd_sbp(2, lambda op, p: sbp_rules.matmul(p, op.attrs["transpose_a"],
                                                                    op.attrs["transpose_b"]))))
register(OpDef("reduce_sum_sgd_update", infer=lambda op: [], in_place=True, collective=True,
               build_collective=_fused_sgd_build(1, optim_k.reduce_sum_sgd_update,
                                                 lambda op: {"axis": op.attrs["axis"]}, _reduce_sum_gradient),
               sbp=_fused_sgd_sbp(1, lambda op, p: sbp_rules.reduction(p, op.attrs["axis"], False, True))))
