"""The plan `explain` prints, drawn: `oneflow-compat explain --svg plan.svg script.py`, `flow.explain(job, to=FILE)`.

One panel per report (a legacy session's jobs, an nn.Graph, an eager program's boxing), each drawn as a sequence
diagram of its stages:

* top: one column per stage (ops that share a placement), one row per device (`m:d`) or rank; a filled cell is a
  device the stage runs on, and under the cells the stage's ops (name, type, output SBP), by section;
* below: every boxing in plan order, one line each: an arrow from the column of the producer's placement to the
  consumer's (a loop on the column itself when the placement stays and only the SBP changes), labelled with what
  is moved (blob, shape, dtype), the SBP change, the collective and the bytes it moves per call (per
  micro-batch for an nn.Graph's forward and backward; the eager rows times their calls), coloured by section.

Drawn with matplotlib (the `plot` extra: `pip install 'oneflow_compat[plot]'`): it writes SVG and PNG itself, with
no program outside Python (graphviz would need its `dot` binary, which no Python package installs), and the layout
is a grid the plan already gives (stages in order, devices in order), so a graph-layout engine has nothing to add.
"""
import dataclasses
import os
import re

SECTION_COLORS = {"forward": "#1f77b4", "backward": "#d62728", "optimizer": "#2ca02c", "eager": "#9467bd",
                  "gradient": "#d62728"}
_FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf"}
SECTIONS = ("forward", "backward", "optimizer")
LABEL = "%s \u00b7 %s \u00b7 %s, %s \u00b7 %s"  # what · SBP change · collective, bytes · section (no double spaces: SVG
# viewers collapse them)


def missing_library():
    """Why a picture cannot be drawn here (None when it can)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return ("drawing the plan needs matplotlib, which is not installed: pip install 'oneflow_compat[plot]' "
                "(or pip install matplotlib)")
    return None


@dataclasses.dataclass
class Stage:
    key: object
    title: str
    devices: list  # [(machine, device)]
    lines: list  # text lines: the stage's ops


@dataclasses.dataclass
class Edge:
    src: object  # stage keys
    dst: object
    what: str
    change: str
    collective: str
    bytes: float
    section: str


@dataclasses.dataclass
class Diagram:
    title: str
    stages: list
    edges: list
    footer: str = ""


# --- reports -> diagrams -----------------------------------------------------------------------------------------
def _pairs(placement):
    pairs = getattr(placement, "pairs", None)
    if pairs is not None:
        return list(pairs)
    text = str(placement)  # "cpu ranks [0, 1]" (global_eager.placement_text)
    found = re.search(r"ranks \[([\d, ]*)\]", text)
    if found:
        return [(int(r), 0) for r in found.group(1).replace(",", " ").split()]
    return []


def _placement_text(placement):
    pairs = getattr(placement, "pairs", None)
    if pairs is not None and pairs and all(d == 0 for _, d in pairs) and len({m for m, _ in pairs}) > 1:
        return "%s ranks %s" % (placement.device_tag, ", ".join(str(m) for m, _ in pairs))
    return str(placement)


def _shape(shape, dtype):
    return "%s %s" % ("x".join(map(str, shape)) or "scalar", dtype)


def _fmt_bytes(n):
    n = float(n)
    text = "{:,}".format(int(n)) if n.is_integer() else "{:,.1f}".format(n)
    return text + " B"


def _sbps(sbps):
    return ",".join(map(repr, sbps or [])) or "-"


def _job_diagram(report, job, job_type):
    ops = [o for o in report.ops if o.job == job]
    boxing = [b for b in report.boxing if b.job == job]
    stages = {}
    for o in ops:
        if o.boxing:  # the boxing ops are the arrows
            continue
        st = stages.get(o.placement)
        if st is None:
            st = stages[o.placement] = Stage(o.placement, "", _pairs(o.placement), [])
        text = "%s (%s) -> %s" % (o.name, o.type, _sbps(o.sbp_out))
        if len(text) + 2 > _OP_CHARS:  # too wide for its column: the op's type goes first
            text = "%s -> %s" % (o.name, _sbps(o.sbp_out))
        st.lines.append((o.section, text))
    for b in boxing:  # a boxing between placements no op of the job holds (rare): still a column
        for pl in (b.src_placement, b.dst_placement):
            if pl not in stages:
                stages[pl] = Stage(pl, "", _pairs(pl), [])
    out = []
    for i, st in enumerate(stages.values()):
        n = len(st.devices)
        st.title = "stage %d: %s (%d device%s)" % (i, _placement_text(st.key), n, "" if n == 1 else "s")
        lines = []
        for section in SECTIONS:
            these = [text for s, text in st.lines if s == section]
            if these:
                lines.append("%s ops (%d):" % (section, len(these)))
                lines.extend("  " + t for t in these)
        st.lines = lines
        out.append(st)
    edges = [Edge(b.src_placement, b.dst_placement, "%s %s" % (b.blob, _shape(b.shape, b.dtype)),
                  "%r -> %r" % (b.src_sbp, b.dst_sbp), b.collective, b.bytes, b.section) for b in boxing]
    total = sum(b.bytes for b in boxing)
    per = ", ".join("%s %s" % (s, _fmt_bytes(sum(b.bytes for b in boxing if b.section == s))) for s in SECTIONS)
    return Diagram("job '%s' (%s): %d ops, %d boxing" % (job, job_type, len(ops), len(boxing)), out, edges,
                   "total: %s per call (%s)" % (_fmt_bytes(total), per))


def _graph_diagram(report):
    stages = []
    for s, pl, counts in report.stages:
        key = ("stage", s, pl)
        title = "%s: %s" % ("stage %s" % s if s is not None else "no stage", pl)
        lines = ["%s ops: %d" % (section, n) for section, n in counts.items() if n]
        stages.append(Stage(key, title, _pairs(pl), lines))

    def key_of(stage, text):
        placement = text.rsplit(" ", 1)[0]  # "cpu ranks [0, 1] B" -> the placement part
        for st in stages:
            if st.key[1] == stage and st.key[2] == placement:
                return st.key
        for st in stages:
            if st.key[2] == placement:
                return st.key
        extra = Stage(("stage", stage, placement), placement, _pairs(placement), [])
        stages.append(extra)
        return extra.key

    edges = []
    for b in report.boxing:
        src, dst = key_of(b["from_stage"], b["src"]), key_of(b["to_stage"], b["dst"])
        edges.append(Edge(src, dst, "%s %s" % (b["blob"], _shape(b["shape"], b["dtype"])),
                          "%s -> %s" % (b["src"].rsplit(" ", 1)[-1], b["dst"].rsplit(" ", 1)[-1]),
                          b["collective"], b["bytes"], b["section"]))
    title = "nn.Graph '%s' (%s, %d micro-batch%s per call): %d boxing" % (
        report.name, report.job_type, report.micro_batches, "" if report.micro_batches == 1 else "es",
        len(report.boxing))
    return Diagram(title, stages, edges, "bytes per micro-batch (optimizer: per call); total %s per call" %
                   _fmt_bytes(report.bytes_per_call()))


def _eager_diagram(report):
    stages = {}
    edges = []
    for rec, calls in report.rows:
        for pl in (rec.src_placement, rec.dst_placement):
            if pl not in stages:
                stages[pl] = Stage(pl, "", _pairs(pl), [])
        label = getattr(rec, "op", "")
        section = "gradient" if "gradient" in label or "backward" in label else "eager"
        edges.append(Edge(rec.src_placement, rec.dst_placement,
                          "%s %s, %d call%s" % (label, _shape(rec.shape, rec.dtype), calls, "" if calls == 1 else "s"),
                          "%r -> %r" % (rec.src_sbp, rec.dst_sbp), rec.collective, rec.bytes * calls, section))
    for i, st in enumerate(stages.values()):
        n = len(st.devices)
        st.title = "placement %d: %s (%d rank%s)" % (i, _placement_text(st.key), n, "" if n == 1 else "s")
    return Diagram("eager global ops: %d boxing transfer%s" % (len(edges), "" if len(edges) == 1 else "s"),
                   list(stages.values()), edges, "bytes: every call of the transfer together; total %s"
                   % _fmt_bytes(report.total_bytes()))


def diagrams(reports):
    """The diagrams of `reports` (explain's Report, EagerReport, GraphReport objects, or a list of them)."""
    if not isinstance(reports, (list, tuple)):
        reports = [reports]
    out = []
    for report in reports:
        if hasattr(report, "jobs") and hasattr(report, "ops"):
            out.extend(_job_diagram(report, job, job_type) for job, job_type in report.jobs)
        elif hasattr(report, "rows"):
            out.append(_eager_diagram(report))
        elif hasattr(report, "stages") and hasattr(report, "micro_batches"):
            out.append(_graph_diagram(report))
        else:
            raise TypeError("cannot draw %r: expected a report of explain" % (type(report).__name__,))
    return out


# --- drawing -----------------------------------------------------------------------------------------------------
_COL_W = 4.6  # data units per stage column
_ROW_H = 0.42
_LINE_H = 0.26
_EDGE_H = 0.62
_OP_CHARS = 70  # characters of an op line that fit a column


def _device_label(pair, ranks_only):
    return "rank %d" % pair[0] if ranks_only else "%d:%d" % pair


def _panel_height(d, rows):
    op_lines = max([len(s.lines) for s in d.stages] + [0])
    return 1.4 + rows * _ROW_H + op_lines * _LINE_H + max(1, len(d.edges)) * _EDGE_H + 0.9


def _draw_panel(ax, d):
    from matplotlib.patches import FancyArrowPatch, Rectangle

    devices = sorted({p for s in d.stages for p in s.devices})
    ranks_only = all(dev == 0 for _, dev in devices)
    row_of = {p: i for i, p in enumerate(devices)}
    col_of = {s.key: i for i, s in enumerate(d.stages)}
    n_cols = max(1, len(d.stages))
    op_lines = max([len(s.lines) for s in d.stages] + [0])
    width = n_cols * _COL_W
    y = 0.0
    ax.text(-1.5, y, d.title, fontsize=11, fontweight="bold", va="top", ha="left")
    y -= 0.8
    for i, s in enumerate(d.stages):  # stage titles
        ax.text(i * _COL_W + 0.1, y, s.title, fontsize=7.5, fontweight="bold", va="top", ha="left")
    y -= 0.45
    for p, r in row_of.items():  # the device rows: which stage runs where
        yy = y - r * _ROW_H
        ax.text(-0.2, yy - _ROW_H / 2, _device_label(p, ranks_only), fontsize=7, va="center", ha="right")
        for i, s in enumerate(d.stages):
            on = p in s.devices
            ax.add_patch(Rectangle((i * _COL_W + 0.1, yy - _ROW_H + 0.05), _COL_W - 0.6, _ROW_H - 0.1,
                                   facecolor="#cfe3f7" if on else "#f4f4f4", edgecolor="#6b8fb3" if on else "#dddddd",
                                   linewidth=0.6))
    y -= len(devices) * _ROW_H + 0.15
    for i, s in enumerate(d.stages):  # the ops of each stage
        for k, line in enumerate(s.lines):
            line = line if len(line) <= _OP_CHARS else line[:_OP_CHARS - 3] + "..."  # within its column
            op = line.startswith(" ")  # an op under its section's heading: indented by position, not by spaces
            ax.text(i * _COL_W + (0.3 if op else 0.15), y - k * _LINE_H, line.strip(), fontsize=5.8, va="top",
                    ha="left", family="monospace", color="#333333" if op else "#000000",
                    fontweight="normal" if op else "bold")
    y -= op_lines * _LINE_H + 0.3
    edges_top = y
    ax.text(-1.5, y + 0.05, "boxing, in plan order:", fontsize=8, fontweight="bold", va="bottom", ha="left")
    for k, e in enumerate(d.edges):
        yy = y - (k + 0.7) * _EDGE_H
        a, b = col_of[e.src], col_of[e.dst]
        xa, xb = a * _COL_W + _COL_W / 2 - 0.25, b * _COL_W + _COL_W / 2 - 0.25
        color = SECTION_COLORS.get(e.section, "#444444")
        label = LABEL % (e.what, e.change, e.collective, _fmt_bytes(e.bytes), e.section)
        if a == b:  # same placement, new SBP: a loop on the stage's line
            ax.add_patch(FancyArrowPatch((xa, yy + 0.16), (xa, yy - 0.16), connectionstyle="arc3,rad=-1.6",
                                         arrowstyle="-|>", mutation_scale=9, color=color, linewidth=1.3))
            ax.text(xa + 0.38, yy, label, fontsize=6.3, va="center", ha="left", color=color)
        else:
            ax.add_patch(FancyArrowPatch((xa, yy), (xb, yy), arrowstyle="-|>", mutation_scale=11, color=color,
                                         linewidth=1.5, shrinkA=2, shrinkB=2))
            ax.text(min(xa, xb) + 0.15, yy + 0.07, label, fontsize=6.3, va="bottom", ha="left", color=color)
    y -= max(1, len(d.edges)) * _EDGE_H
    if not d.edges:
        ax.text(0.1, edges_top - 0.4, "(none: every op's inputs already lie as it needs them)", fontsize=7,
                va="center", ha="left", color="#555555")
    for i in range(len(d.stages)):  # each stage's line down through the boxing rows
        x = i * _COL_W + _COL_W / 2 - 0.25
        ax.plot([x, x], [edges_top, y], color="#b0b0b0", linewidth=0.8, linestyle=(0, (3, 3)), zorder=0)
    ax.text(-1.5, y - 0.25, d.footer, fontsize=7.5, va="top", ha="left")
    ax.set_xlim(-1.7, max(width, 9.5) + 3.5)
    ax.set_ylim(y - 0.8, 0.3)
    ax.axis("off")


def draw(reports, path):
    """Writes the picture of `reports` to `path` (.svg, .png or .pdf: the suffix chooses); returns `path`."""
    missing = missing_library()
    if missing:
        raise RuntimeError(missing)
    fmt = _FORMATS.get(os.path.splitext(str(path))[1].lower())
    if fmt is None:
        raise ValueError("explain: cannot draw %s: the file name must end in .svg, .png or .pdf" % (path,))
    from matplotlib.figure import Figure  # a figure of its own: no pyplot, no backend or window chosen

    panels = diagrams(reports)
    rows = [len({p for s in d.stages for p in s.devices}) for d in panels]
    heights = [_panel_height(d, r) for d, r in zip(panels, rows)]
    cols = max([max(1, len(d.stages)) for d in panels] + [1])
    fig = Figure(figsize=(max(11.0, cols * _COL_W * 0.62 + 6.5), sum(heights) * 0.62 + 0.3))
    axes = fig.subplots(len(panels), 1, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]
    for ax, d in zip(axes, panels):
        _draw_panel(ax, d)
    fig.subplots_adjust(left=0.02, right=0.98, top=0.99, bottom=0.01, hspace=0.08)
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none"}):  # SVG text stays text: searchable, selectable, smaller
        fig.savefig(str(path), format=fmt, dpi=130)
    return path

