"""`Tensor.to_global` / `to_consistent`: local -> global and global -> global, both differentiable.

Local -> global (every rank of the world calls it): split(d) concatenates the ranks' local tensors along d (their
sizes must follow the balanced split), broadcast takes the placement's first rank's value, partial_sum adds the
local tensors; ranks outside the placement hold an empty piece. The gradient of a rank's local tensor is its
piece of the global gradient laid out like the forward (a partial-sum input's gradient is the whole gradient:
each addend moves the sum one for one).

Global -> global: any SBP transition and any placement change through the boxing (`global_eager.transfer`); the
gradient goes back to the source placement, with the source SBP or `grad_sbp`. The same placement and SBP give
the same tensor object.
"""
from oneflow_compat import sbp as flow_sbp
from oneflow_compat.ir import sbp as S
from oneflow_compat.runtime import autograd, global_eager
from oneflow_compat._global import lazy
from oneflow_compat._global.tensor import Tensor, check_placement, normalize_sbp


def _sbp_arg(sbp, ndim, what, placement):
    """The compiler SBP of an `sbp=` argument for `placement` (a tuple of one symbol per placement dimension)."""
    return normalize_sbp(flow_sbp.to_ir(sbp, what + ": sbp", placement), ndim, what)


def to_global(t, placement=None, sbp=None, grad_sbp=None, check_meta=True):
    """`t.to_global(...)`; `check_meta` (local tensors only, as in OneFlow 0.9): False when every rank holds a local
    tensor of one shape and dtype, so that the ranks need not exchange them (`global_eager.from_local`)."""
    what = "to_global"
    if lazy.tracer_active():
        return _in_graph(t, placement, sbp, grad_sbp)
    if t.is_local:
        if placement is None or sbp is None:
            raise ValueError("to_global of a local tensor needs both placement and sbp, got placement=%r, sbp=%r"
                             % (placement, sbp))
        return _local_to_global(t, check_placement(placement, what), sbp, grad_sbp, check_meta)
    placement = t.placement if placement is None else check_placement(placement, what)
    shown = t.sbp if sbp is None else _shown(sbp)
    dst = _sbp_arg(shown, t.ndim, what, placement)
    if placement == t.placement and shown == t.sbp:
        return t
    src = t._value
    out = global_eager.transfer(src, placement.ir(), dst)
    result = Tensor._make(out, placement, shown)
    gsbp = None if grad_sbp is None else _sbp_arg(grad_sbp, t.ndim, what + ": grad_sbp", t.placement)
    if autograd.is_grad_enabled() and t.requires_grad_flag:
        src_pl, src_sbp = src.placement, src.sbp if gsbp is None else gsbp

        def to_global_backward(dys):
            return [autograd.box(dys[0], src_pl, src_sbp)]

        result.requires_grad_flag = True
        result.grad_fn = autograd.FunctionNode("global_to_global_backward", [t._edge()], to_global_backward)
        # create_graph=True (higher_order.py): the same boxing back as a recorded to_global of the gradient
        back_placement, back_sbp = t.placement, t.sbp if grad_sbp is None else _shown(grad_sbp)
        result.grad_fn.backward_tensors = lambda dys: [to_global(dys[0], back_placement, back_sbp)]
    return result


def _in_graph(t, placement, sbp, grad_sbp):
    """Inside nn.Graph.build: an op of the graph's job (a boxing between stages when the placement changes)."""
    what = "to_global"
    if t.is_local:
        return lazy.to_global(t, placement, None, None)  # refused, with OneFlow's message
    placement = t.placement if placement is None else check_placement(placement, what)
    shown = t.sbp if sbp is None else _shown(sbp)
    gsbp = None if grad_sbp is None else _sbp_arg(grad_sbp, t.ndim, what + ": grad_sbp", t.placement)
    return lazy.to_global(t, placement, _sbp_arg(shown, t.ndim, what, placement), shown, gsbp)


def _shown(sbp):
    if isinstance(sbp, (list, tuple)):
        return tuple(sbp)
    return (sbp,)


def _local_to_global(t, placement, sbp, grad_sbp, check_meta=True):
    what = "to_global"
    shown = _shown(sbp)
    ir_sbp = _sbp_arg(shown, t.ndim, what, placement)
    local = t._value
    out = global_eager.from_local(local, placement.ir(), ir_sbp, what, check_meta)
    result = Tensor._make(out, placement, flow_sbp.symbols_of(ir_sbp))
    if out.pieces and local.pieces and out.pieces[0] is local.pieces[0] \
            and not getattr(out.pieces[0], "flags", None) is None and not out.pieces[0].flags.c_contiguous:
        result._foreign_layout = True  # its piece is a local view's memory: to_local shares it as it is
    if autograd.is_grad_enabled() and t.requires_grad_flag:
        back = ir_sbp if grad_sbp is None else _sbp_arg(grad_sbp, t.ndim, what + ": grad_sbp", placement)
        back = _partial_as_broadcast(back)
        pl, meta = out.placement, local.meta

        def local_to_global_backward(dys):
            g = autograd.box(dys[0], pl, back)
            if not g.pieces:
                return [None]
            return [global_eager.Value(meta, local.placement, S.B, [g.pieces[0]])]

        result.requires_grad_flag = True
        result.grad_fn = autograd.FunctionNode("local_to_global_backward", [t._edge()], local_to_global_backward)
        # create_graph=True: the gradient laid out as above, then this rank's piece, both recorded
        back_symbols = flow_sbp.symbols_of(back)
        result.grad_fn.backward_tensors = lambda dys: [to_global(dys[0], placement, back_symbols).to_local()]
    return result


def _partial_as_broadcast(sbp):
    """A partial-sum input's gradient is the whole gradient (each addend moves the sum one for one): P read as B,
    on every mesh axis."""
    if S.is_nd(sbp):
        return S.nd([S.B if s == S.P else s for s in sbp.sbps], sbp.mesh)
    return S.B if sbp == S.P else sbp


def as_layout_of(src, like):
    """`src` (a tensor, array or number) as a tensor laid out like `like` (same placement and SBP)."""
    from oneflow_compat._global import creation

    if not isinstance(src, Tensor):
        src = creation.local_tensor(src, dtype=like.dtype)
        if like.is_global:
            src = src.to_global(like.placement, [flow_sbp.broadcast] * len(like.sbp))
    if like.is_global:
        if src.is_local:
            raise RuntimeError("copy_: cannot copy a local tensor into a global one; convert it with to_global")
        return src.to_global(like.placement, like.sbp)
    return src
