"""Inserts a `boxing` op wherever a producer's (placement, SBP) differs from what its consumer reads: wherever the
transition table (`ops/transitions.py`) has another transition than `identity`, whose name and bytes the op keeps."""
import warnings

from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import LazyBlob, Op
from oneflow_compat.ops import registry, transitions
from oneflow_compat.passes import zero


class ImplicitBoxingError(RuntimeError):
    pass


def insert(job):
    mode = job.config.implicit_boxing_ if job.config is not None else "silent"
    produced = {}
    cache = {}
    shared = zero.groups_boxing(job)  # OneFlow's GroupBoxingByDstParallel; ZeRO stage 3 turns it off
    new_ops = []
    defn = registry.get("boxing")
    for op in job.ops:
        for i, x in enumerate(op.inputs):
            src_pl, src = produced[x.key()]
            dst_pl, dst = op.placement, op.sbp_in[i]
            move = transitions.Move(src_pl, src, dst_pl, dst)
            t = transitions.transition_of(move)
            if t is transitions.IDENTITY:
                continue
            key = (x.key(), dst_pl, dst) if shared else (x.key(), dst_pl, dst, op.name, i)
            b = cache.get(key)
            if b is None:
                name = job.unique_name("boxing-%s-to-%s" % (x.op.name, op.name))
                bop = Op(job, name, "boxing", defn, [x],
                         {"src_placement": src_pl, "src_sbp": src, "dst_placement": dst_pl, "dst_sbp": dst,
                          "bytes": t.cost(move, x.meta),
                          "producer": x.op.name, "consumer": op.name, "collective": t.describe(move, x.meta)},
                         dst_pl, "mirrored" if dst == S.M else "consistent")
                bop.section = op.section
                bop.sbp_in, bop.sbp_out = [src], [dst]
                bop.outputs = [LazyBlob(bop, 0, x.meta)]
                job.op_names[name] = bop
                new_ops.append(bop)
                b = cache[key] = bop.outputs[0]
                implicit = i not in op.in_hints and src_pl.pairs == dst_pl.pairs
                if implicit and mode != "silent" and op.section == "forward":
                    msg = ("job '%s': implicit boxing %s -> %s of %s for op '%s' (%s, %d bytes per call)" % (
                        job.name, src, dst, x.logical_blob_name, op.name, bop.attrs["collective"],
                        int(bop.attrs["bytes"])))
                    if mode == "error":
                        raise ImplicitBoxingError(msg)
                    warnings.warn(msg, stacklevel=2)
            op.inputs[i] = b
        for y, s in zip(op.outputs, op.sbp_out):
            produced[y.key()] = (op.placement, s)
        new_ops.append(op)
    job.ops = new_ops
