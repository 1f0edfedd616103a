"""What a compiled job does on its devices: each op's placement and SBP, and every boxing transition with the
bytes it moves per call — the bytes the busiest device sends in the collective the boxing runs (each device its
own rank, as in the global-tensor API; `ops/transitions.py` defines the figure, the SBP inference prices with it,
and `tests/test_boxing_bytes.py` holds it against what a recording comm counts).

    report = oneflow_compat.explain(train_job)   # the function @flow.global_function returned
    print(report)
    report.total_bytes("optimizer")

`python -m oneflow_compat explain script.py [args]` runs a legacy script until its first job call, compiles
instead of running it, prints the report of every job of the session, and exits 0. A global-tensor program runs
to its end, then every boxing its eager ops performed is listed (`oneflow_compat.explain()` gives that report
from inside a program).
"""
import argparse
import collections
import dataclasses
import os
import runpy
import sys

from oneflow_compat.framework import session as sess

SECTIONS = ("forward", "backward", "optimizer")


@dataclasses.dataclass
class OpEntry:
    job: str
    name: str
    type: str
    placement: object
    sbp_in: list
    sbp_out: list
    section: str
    boxing: bool = False  # the op is a boxing (its OpDef says so): drawn as an arrow, not as an op


@dataclasses.dataclass
class BoxingEntry:
    job: str
    name: str
    producer: str
    consumer: str
    blob: str  # logical blob name of what is moved
    shape: tuple
    dtype: str
    src_placement: object
    src_sbp: object
    dst_placement: object
    dst_sbp: object
    collective: str
    bytes: float  # per call: what the busiest rank sends, as the transition table counts it (ops/transitions.py)
    section: str


class Report:
    """Ops and boxing of one or more compiled jobs, in plan order."""

    def __init__(self, jobs, ops, boxing):
        self.jobs = list(jobs)  # [(name, type)]
        self.ops = list(ops)
        self.boxing = list(boxing)

    def total_bytes(self, section=None):
        return sum(b.bytes for b in self.boxing if section is None or b.section == section)

    def by_collective(self):
        """{collective: (count, bytes)}."""
        out = {}
        for b in self.boxing:
            n, total = out.get(b.collective, (0, 0.0))
            out[b.collective] = (n + 1, total + b.bytes)
        return out

    def op(self, name):
        for o in self.ops:
            if o.name == name:
                return o
        raise KeyError("no op named %r in the report" % (name,))

    def __add__(self, other):
        return Report(self.jobs + other.jobs, self.ops + other.ops, self.boxing + other.boxing)

    def __str__(self):
        parts = []
        for job, job_type in self.jobs:
            ops = [o for o in self.ops if o.job == job]
            boxing = [b for b in self.boxing if b.job == job]
            parts.append(_format_job(job, job_type, ops, boxing))
        return "\n\n".join(parts)

    __repr__ = __str__


def _sbps(sbps):
    return "[%s]" % ", ".join(map(repr, sbps or []))


def _table(header, rows):
    rows = [tuple(str(c) for c in r) for r in rows]
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header] + rows)


def _fmt_bytes(n):
    return ("%d" % n) if float(n).is_integer() else ("%.1f" % n)


def _format_job(job, job_type, ops, boxing):
    lines = ["job '%s' (%s): %d ops, %d boxing" % (job, job_type, len(ops), len(boxing))]
    lines.append(_table(("op", "type", "placement", "sbp in", "sbp out", "section"),
                        [(o.name, o.type, o.placement, _sbps(o.sbp_in), _sbps(o.sbp_out), o.section) for o in ops]))
    if boxing:
        lines.append("")
        lines.append("boxing (bytes per call: what the busiest device sends, ops/transitions.py):")
        lines.append(_table(("blob", "shape", "from", "to", "collective", "bytes", "consumer", "section"),
                            [(b.blob, "x".join(map(str, b.shape)) + " " + b.dtype,
                              "%s %r" % (b.src_placement, b.src_sbp), "%s %r" % (b.dst_placement, b.dst_sbp),
                              b.collective, _fmt_bytes(b.bytes), b.consumer, b.section) for b in boxing]))
        lines.extend(_mesh_steps([("%s -> %s" % (b.blob, b.consumer), b.shape, b.dtype, b.src_placement, b.src_sbp,
                                   b.dst_placement, b.dst_sbp) for b in boxing]))
    per_section = ", ".join("%s %s" % (s, _fmt_bytes(sum(b.bytes for b in boxing if b.section == s)))
                            for s in SECTIONS)
    lines.append("total: %s bytes per call (%s)" % (_fmt_bytes(sum(b.bytes for b in boxing)), per_section))
    return "\n".join(lines)


def _mesh_steps(rows):
    """The steps of every boxing on an n-D mesh (`ops/mesh_transitions.py`): one line per step with its mesh axis,
    symbols, collective, the groups of ranks it runs over and the bytes its busiest rank sends. `rows`: (what,
    shape, dtype name, src placement, src sbp, dst placement, dst sbp)."""
    import numpy as np

    from oneflow_compat.ops import mesh_transitions, transitions

    lines = []
    for what, shape, dtype, src_pl, src, dst_pl, dst in rows:
        move = transitions.Move(src_pl, src, dst_pl, dst)
        if not move.nd:
            continue
        try:
            itemsize = np.dtype(dtype).itemsize
        except TypeError:
            itemsize = 8
        if not lines:
            lines.append("")
            lines.append("steps of the boxing on n-D meshes (one mesh axis at a time, over its groups of ranks):")
        lines.append("  %s, %r -> %r%s:" % (what, src, dst, "" if src_pl == dst_pl else " (%s -> %s)" % (
            src_pl, dst_pl)))
        for text, nbytes in mesh_transitions.step_lines(move, shape, itemsize):
            lines.append("    %s: %s bytes" % (text, _fmt_bytes(nbytes)))
    return lines


def report_of_job(job):
    ops, boxing = [], []
    for op in job.ops:
        ops.append(OpEntry(job.name, op.name, op.type, op.placement, list(op.sbp_in or []), list(op.sbp_out or []),
                           op.section, bool(op.defn.boxing)))
        if op.defn.boxing:
            a = op.attrs
            x = op.inputs[0]
            boxing.append(BoxingEntry(job.name, op.name, a["producer"], a["consumer"], x.logical_blob_name,
                                      tuple(x.shape), x.dtype.name, a["src_placement"], a["src_sbp"],
                                      a["dst_placement"], a["dst_sbp"], a["collective"], float(a["bytes"]),
                                      op.section))
    return Report([(job.name, job.type)], ops, boxing)


def _job_function_of(job_function):
    from oneflow_compat.framework.job_function import JobFunction

    if isinstance(job_function, JobFunction):
        return job_function
    jf = getattr(job_function, "__oneflow_job_function__", None)
    if jf is None:
        raise TypeError("explain() expects a function decorated with @flow.global_function, got %r"
                        % (job_function,))
    return jf


def _compiled_session(session):
    if session.eager:
        raise RuntimeError("explain: the session runs in eager mode (flow.enable_eager_execution); there is no "
                           "compiled plan to explain")
    session.try_init()
    return session


def explain(job_function):
    """The report of one job function's compiled plan (compiles the session when it has not started), or of a
    called `nn.Graph`'s plan (its stages and the bytes each boxing moves per micro-batch)."""
    graph_report = getattr(job_function, "explain_report", None)
    if graph_report is not None:
        return graph_report()
    jf = _job_function_of(job_function)
    session = _compiled_session(jf.session)
    job = session.jobs.get(jf.name)
    if job is None:
        raise KeyError("job function '%s' is not among the session's compiled jobs %s" % (
            jf.name, sorted(session.jobs)))
    return report_of_job(job)


def explain_session(session=None):
    """One report over every job of the (default) session, compiling it if needed."""
    session = _compiled_session(session or sess.default_session())
    reports = [report_of_job(session.jobs[name]) for name in session.jobs]
    out = Report([], [], [])
    for r in reports:
        out = out + r
    return out


# --- eager global programs: the boxing their ops performed ---------------------------------------------------------
class EagerReport:
    """Every boxing the eager global ops of this process took part in (`runtime/global_eager.py` counts them):
    one row per distinct transfer (op, shape, layouts), with its bytes per call and its number of calls."""

    def __init__(self, rows):
        self.rows = list(rows)  # [(global_eager.BoxingRecord, calls)]

    def total_bytes(self):
        return sum(rec.bytes * calls for rec, calls in self.rows)

    def by_collective(self):
        """{collective: (calls, bytes)}."""
        out = {}
        for rec, calls in self.rows:
            n, total = out.get(rec.collective, (0, 0.0))
            out[rec.collective] = (n + calls, total + rec.bytes * calls)
        return out

    def __str__(self):
        from oneflow_compat.runtime import global_eager

        calls = sum(c for _, c in self.rows)
        lines = ["eager global ops: %d boxing transfer%s (%d call%s), %s bytes in all" % (
            len(self.rows), "" if len(self.rows) == 1 else "s", calls, "" if calls == 1 else "s",
            _fmt_bytes(self.total_bytes()))]
        if self.rows:
            text = global_eager.placement_text
            lines.append(_table(("op", "shape", "from", "to", "collective", "bytes per call", "calls"),
                                [(rec.op, "x".join(map(str, rec.shape)) + " " + rec.dtype,
                                  "%s %r" % (text(rec.src_placement), rec.src_sbp),
                                  "%s %r" % (text(rec.dst_placement), rec.dst_sbp), rec.collective,
                                  _fmt_bytes(rec.bytes), calls) for rec, calls in self.rows]))
            lines.extend(_mesh_steps([(rec.op, rec.shape, rec.dtype, rec.src_placement, rec.src_sbp,
                                       rec.dst_placement, rec.dst_sbp) for rec, _ in self.rows]))
        return "\n".join(lines)

    __repr__ = __str__


def explain_eager():
    """The report of the boxing this process's eager global ops performed so far."""
    from oneflow_compat.runtime import global_eager

    return EagerReport(global_eager.boxing_log())


# --- the CLI: run a script, compile at its first job call, print, exit --------------------------------------------
class _Explained(SystemExit):
    """Raised out of the script at its first job call, after the report is made."""

    def __init__(self, code, reports=()):
        super().__init__(code)
        self.reports = list(reports)


def _merged_eager_report():
    """The eager boxing of every rank (each rank logs the transfers it took part in): gathered, the calls of a row
    that several ranks logged counted once."""
    from oneflow_compat.runtime import global_eager

    rows = global_eager.boxing_log()
    comm = global_eager.comm()
    if comm.size > 1:
        merged = collections.OrderedDict()  # the same transfer compares by its text (unpickled objects are new)
        for rank_rows in comm.allgather_object(rows):
            for rec, calls in rank_rows:
                key = repr(tuple(rec))
                seen = merged.get(key)
                merged[key] = (rec, calls if seen is None else max(seen[1], calls))
        rows = list(merged.values())
    return EagerReport(rows)


class _Tee:
    """The script's stdout, passed through and remembered (the first 4 MB), so that a report the script printed
    itself is not printed a second time."""

    _KEEP = 4 << 20

    def __init__(self, stream):
        self.stream, self.seen, self.kept = stream, [], 0

    def write(self, text):
        if self.kept < self._KEEP:
            self.seen.append(text)
            self.kept += len(text)
        return self.stream.write(text)

    def printed(self, text):
        return text in "".join(self.seen)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def _first_rank():
    from oneflow_compat.comm import world

    return world.job_rank() == 0


def run_script(script, args, out=None):
    """Runs `script` with `args` until a job is called (a legacy program) or to its end (a global-tensor one).

    Returns (exit status, [reports]): 0 when explained. The reports are printed to `out` once per job — on the
    first rank only when several processes run the program."""
    from oneflow_compat.framework.eager import EagerJobFunction
    from oneflow_compat.framework.job_function import JobFunction

    import oneflow_compat_alias

    out = out or sys.stdout
    oneflow_compat_alias.install_override()
    original, original_eager = JobFunction.call, EagerJobFunction.__call__

    def compile_and_explain(self, call_args):
        raise _Explained(0, [explain_session(self.session)])

    def refuse_eager(self, *call_args, **kwargs):
        # eager jobs run op by op as they are called: there is no plan, and running would train
        raise _Explained(1)

    saved_argv, saved_stdout = list(sys.argv), sys.stdout
    tee = sys.stdout = _Tee(sys.stdout)
    sys.argv = [script] + list(args)
    script_dir = os.path.dirname(os.path.abspath(script))
    sys.path.insert(0, script_dir)
    JobFunction.call, EagerJobFunction.__call__ = compile_and_explain, refuse_eager
    code, reports, problem = 0, [], None
    try:
        runpy.run_path(script, run_name="__main__")
    except _Explained as done:
        code, reports = done.code, done.reports
        if code == 1:
            problem = "explain: %s runs in eager mode (flow.enable_eager_execution); nothing is compiled" % script
    finally:
        JobFunction.call, EagerJobFunction.__call__ = original, original_eager
        sys.argv, sys.stdout = saved_argv, saved_stdout
        if sys.path and sys.path[0] == script_dir:
            sys.path.pop(0)
    if not reports and problem is None:
        session = sess.default_session()
        if session.eager:
            code, problem = 1, "explain: %s runs in eager mode; nothing is compiled" % script
        elif session.status == "open" and not session.job_functions:
            from oneflow_compat.runtime import global_eager

            if global_eager.started():  # an eager global-tensor program: the boxing its ops performed
                from oneflow_compat.runtime import graph_report

                reports = [_merged_eager_report()] + graph_report.reports()  # and its nn.Graphs' plans
            else:
                code, problem = 1, "explain: %s defines no job function and runs no global tensor op" % script
        else:  # the script never called a job (or only compiled through a checkpoint call): what it defined
            reports = [explain_session(session)]
    if _first_rank():
        if problem:
            print(problem, file=out)
        for i, report in enumerate(reports):
            text = str(report)
            if tee.printed(text):  # the script printed this very report itself (e.g. print(flow.explain(job)))
                print("explain: the plan the script printed above is the whole report%s"
                      % (" of %s" % report.jobs[0][0] if getattr(report, "jobs", None) else ""), file=out)
                continue
            if i:
                print("", file=out)
            print(text, file=out)
        out.flush()
    return code, reports


DESCRIPTION = ("Show what a program's compiled plan does on its devices: each op's placement and SBP, and every "
               "boxing with its collective and the bytes it moves per call. A legacy script runs until its first "
               "job call, which is compiled instead of run; a global-tensor program runs to its end.")


def _rank_count(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError("expected a number of ranks >= 1, got %r" % text)
    return n


def add_arguments(parser):
    """The command line of `oneflow-compat explain` (`python -m oneflow_compat explain`)."""
    parser.add_argument("--ranks", type=_rank_count, metavar="N",
                        help="explain the program as N ranks (processes; machines of a legacy program) run it: a "
                             "legacy program is compiled for N machines in this one process, a global-tensor "
                             "program's N ranks run as threads of this process (simulated ranks); the report is "
                             "printed once")
    parser.add_argument("--svg", metavar="FILE", help="also draw the plan as an SVG picture (needs matplotlib: "
                                                      "pip install 'oneflow_compat[plot]')")
    parser.add_argument("--png", metavar="FILE", help="also draw the plan as a PNG picture (needs matplotlib)")
    parser.add_argument("script", help="the program to explain")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the program's own arguments")
    return parser


def run(options, out=None):
    if not os.path.isfile(options.script):
        print("explain: no such script: %s" % options.script, file=sys.stderr)
        return 2
    pictures = [p for p in (options.svg, options.png) if p]
    if pictures:
        from oneflow_compat.tools import plan_picture

        missing = plan_picture.missing_library()
        if missing:  # before the program runs, not after
            print("explain: %s" % missing, file=sys.stderr)
            return 2
    if getattr(options, "ranks", None) and options.ranks > 1:
        from oneflow_compat.tools import explain_ranks

        code, reports = explain_ranks.run(options, out, run_script, _merged_eager_report)
    else:
        code, reports = run_script(options.script, options.args, out)
    if reports and pictures and _first_rank():
        from oneflow_compat.tools import plan_picture

        for path in pictures:
            plan_picture.draw(reports, path)
            print("explain: the plan's picture is in %s" % path, file=out or sys.stdout)
    return code


def main(argv=None):
    parser = add_arguments(argparse.ArgumentParser(prog="python -m oneflow_compat explain", description=DESCRIPTION))
    return run(parser.parse_args(argv))


class _CallableModule(type(sys)):
    """`oneflow_compat.explain` is both this module and the function: `oneflow_compat.explain(job)` calls
    `explain(job)` while `oneflow_compat.explain.Report` etc. stay reachable (a function of the same name bound in
    the package would shadow the submodule for `import oneflow_compat.explain as m`)."""

    def __call__(self, job_function=None, to=None):
        """The report (printable) of a job function, an nn.Graph, or (no argument) the eager program so far;
        `to=FILE` also draws it there (.svg, .png or .pdf; needs matplotlib, the `plot` extra)."""
        report = explain_eager() if job_function is None else explain(job_function)
        if to is not None:
            from oneflow_compat.tools import plan_picture

            plan_picture.draw(report, to)
        return report


sys.modules[__name__].__class__ = _CallableModule
