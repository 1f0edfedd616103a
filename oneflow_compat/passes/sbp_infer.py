"""Greedy SBP inference: op by op in topological order, the declared signature that needs the cheapest boxing
of its inputs (bytes moved, as the transition table `ops/transitions.py` counts them); ties go to the first
declared. Users' hints (`with_distribute`, `model_distribute`, `get_variable(distribute=)`, `parallel_cast`) are
constraints."""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ops import transitions


def _normalize(pl, s):
    return S.B if pl.parallel_num == 1 and s != S.M else s


def infer(job, exact_first=False):
    """`exact_first` (eager global ops): a signature that reads every input as it lies wins over one whose only
    boxing is free (B -> S slices), as OneFlow's eager inference does (matmul(B, B) stays B)."""
    produced = {}  # blob key -> (placement, sbp)
    for op in job.ops:
        n = op.placement.parallel_num
        nin, nout = len(op.inputs), len(op.outputs)
        ins = [produced[x.key()] for x in op.inputs]
        if op.defn.sbp == "passthrough":
            sig = ([s for _, s in ins], [s for _, s in ins][:nout])
        elif op.defn.view_cast is not None:
            sig = op.defn.mirrored_sbp(op, ins)
        elif op.view == "mirrored":
            sig = ([S.M] * nin, [S.M] * nout)
        elif n == 1:
            sig = ([S.B] * nin, [S.B] * nout)  # on one device every hint is satisfied by the one full copy
        else:
            sig = _choose(op, ins, exact_first)
        op.sbp_in, op.sbp_out = list(sig[0]), list(sig[1])
        for y, s in zip(op.outputs, op.sbp_out):
            produced[y.key()] = (op.placement, _normalize(op.placement, s))
        op.sbp_in = [_normalize(op.placement, s) for s in op.sbp_in]


def one_device(job):
    """Legacy eager mode's layouts: every op runs on one logical device, so it reads and makes whole values (B);
    ops of a mirrored view keep per-device values (M)."""
    for op in job.ops:
        s = S.M if op.view == "mirrored" else S.B
        op.sbp_in = [s] * len(op.inputs)
        op.sbp_out = [s] * len(op.outputs)


def _choose(op, ins, exact_first=False):
    sigs = op.defn.sbp(op) if op.defn.sbp is not None else None
    if not sigs:
        raise ValueError("op '%s' (%s) has no SBP signature for %d devices (%s)" % (
            op.name, op.type, op.placement.parallel_num, op.placement))
    ok = []
    for sig in sigs:
        in_s, out_s = sig
        if any(in_s[i] != h for i, h in op.in_hints.items() if i < len(in_s)):
            continue
        if any(out_s[i] != h for i, h in op.out_hints.items() if i < len(out_s)):
            continue
        ok.append(sig)
    if not ok:
        raise ValueError("op '%s' (%s): none of its SBP signatures satisfies the distribute hints (inputs %s, "
                         "outputs %s); its signatures are %s" % (
                             op.name, op.type, _fmt(op.in_hints), _fmt(op.out_hints),
                             ", ".join("%s->%s" % (list(a), list(b)) for a, b in sigs)))
    best, best_cost = None, None
    for sig in ok:
        cost = 0.0
        for x, (pl, s), want in zip(op.inputs, ins, sig[0]):
            cost += transitions.cost(pl, s, op.placement, want, transitions.blob_bytes(x.meta))
            if exact_first and (want != s or pl != op.placement):
                cost += _MISMATCH
            if x.op.defn.role == "variable" and x.op.out_hints and want != s:
                # a variable the user distributed explicitly (model parallelism) is read as it lies: moving the
                # weights instead of the activations would undo the user's choice
                cost += _LAST_RESORT
        if best is None or cost < best_cost - 1e-9:
            best, best_cost = sig, cost
    return best


_LAST_RESORT = 1e15
_MISMATCH = 1e-3  # below any byte count: only breaks ties between free and no boxing


def _fmt(h):
    return "{%s}" % ", ".join("%d: %s" % kv for kv in sorted(h.items()))
