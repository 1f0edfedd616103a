"""What a compiled `nn.Graph` does: its ops per pipeline stage and every boxing with the bytes it moves.

Forward and backward steps run once per micro-batch, the optimizer's once per call: the bytes of a forward or
backward boxing are per micro-batch (the job is traced at micro-batch shapes), an optimizer boxing's per call.
An op's stage is the one recorded while `build` ran inside a module with a stage id; ops the passes added
(backward, updates) and boxing take the stage of their placement.
"""
from oneflow_compat.runtime import context, global_eager

_KEPT = 64


def remember(compiled):
    """Keeps the report of a compiled graph (not the graph: its plan holds arrays), for `explain` of a program
    (in the process context: graph name -> GraphReport)."""
    kept = context.get().graph_reports
    kept[compiled.name] = GraphReport(compiled)
    while len(kept) > _KEPT:
        kept.popitem(last=False)


def reports():
    """The reports of the graphs compiled in this process, in compilation order (the last 64)."""
    return list(context.get().graph_reports.values())


def _stages(compiled):
    by_placement = {}
    for op in compiled.job.ops:
        stage = compiled.stage_of.get(op.name)
        if stage is not None:
            by_placement.setdefault(op.placement, stage)
    return by_placement


def stage_of_op(compiled, op, by_placement=None):
    by_placement = _stages(compiled) if by_placement is None else by_placement
    stage = compiled.stage_of.get(op.name)
    return stage if stage is not None else by_placement.get(op.placement)


class GraphReport:
    """Rows of a compiled graph: `stages` [(stage, placement text, {section: op count})] and `boxing`
    [dict(blob, shape, dtype, src, dst, collective, bytes, from_stage, to_stage, section)]."""

    def __init__(self, compiled):
        self.name = compiled.name
        job = compiled.job
        self.job_type = job.type
        self.micro_batches = compiled.micro_batches
        by_pl = _stages(compiled)
        text = global_eager.placement_text
        stages = {}
        self.boxing = []
        for op in job.ops:
            stage = stage_of_op(compiled, op, by_pl)
            key = (stage if stage is not None else -1, text(op.placement))
            counts = stages.setdefault(key, {"forward": 0, "backward": 0, "optimizer": 0})
            counts[op.section] = counts.get(op.section, 0) + 1
            if op.defn.boxing:
                a, x = op.attrs, op.inputs[0]
                self.boxing.append(dict(
                    blob=x.logical_blob_name, shape=tuple(x.shape), dtype=x.dtype.name,
                    src="%s %r" % (text(a["src_placement"]), a["src_sbp"]),
                    dst="%s %r" % (text(a["dst_placement"]), a["dst_sbp"]),
                    collective=a["collective"], bytes=float(a["bytes"]),
                    from_stage=by_pl.get(a["src_placement"]), to_stage=by_pl.get(a["dst_placement"]),
                    section=op.section))
        self.stages = [(s if s >= 0 else None, pl, counts) for (s, pl), counts in sorted(stages.items())]
        self.auto_parallel = getattr(job, "auto_parallel_summary", None)  # passes/auto_parallel.py

    def bytes_per_micro_batch(self):
        return sum(b["bytes"] for b in self.boxing if b["section"] != "optimizer")

    def bytes_per_call(self):
        return self.bytes_per_micro_batch() * self.micro_batches + sum(
            b["bytes"] for b in self.boxing if b["section"] == "optimizer")

    def __str__(self):
        lines = ["nn.Graph '%s' (%s, %d micro-batch%s per call): %d boxing" % (
            self.name, self.job_type, self.micro_batches, "" if self.micro_batches == 1 else "es", len(self.boxing))]
        lines.append(_table(("stage", "placement", "forward ops", "backward ops", "optimizer ops"),
                            [("-" if s is None else s, pl, c["forward"], c["backward"], c["optimizer"])
                             for s, pl, c in self.stages]))
        if self.boxing:
            lines.append("")
            lines.append("boxing (bytes per micro-batch; optimizer: per call):")
            lines.append(_table(
                ("blob", "shape", "from", "to", "collective", "bytes", "stages", "section"),
                [(b["blob"], "x".join(map(str, b["shape"])) + " " + b["dtype"], b["src"], b["dst"], b["collective"],
                  _fmt(b["bytes"]), "%s->%s" % (_s(b["from_stage"]), _s(b["to_stage"])), b["section"])
                 for b in self.boxing]))
        lines.append("total: %s bytes per micro-batch, %s bytes per call" % (
            _fmt(self.bytes_per_micro_batch()), _fmt(self.bytes_per_call())))
        if self.auto_parallel is not None:
            lines.extend(self.auto_parallel.lines())
        return "\n".join(lines)

    __repr__ = __str__


def graph_report(compiled):
    return GraphReport(compiled)


def _s(stage):
    return "-" if stage is None else str(stage)


def _fmt(n):
    return ("%d" % n) if float(n).is_integer() else ("%.1f" % n)


def _table(header, rows):
    rows = [tuple(str(c) for c in r) for r in rows]
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header] + rows)
