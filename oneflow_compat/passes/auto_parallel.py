"""nn.Graph's auto parallelism (`graph.config.enable_auto_parallel(True)`, OneFlow 0.9 auto_parallel.rst): a search
over the SBP signatures of the whole job for the lowest total cost, after the greedy choice (`sbp_infer.infer`).

OneFlow 0.9 (`oneflow/core/job_rewriter/auto_parallel.cpp`, `oneflow/core/auto_parallel/sbp_constructor.cpp`,
`job_conf.proto` for the defaults) prices a strategy as copy cost (the bytes of every boxing, each plus the wait
time `auto_parallel_wait_time` = 1.65e4 when it communicates) plus `auto_parallel_computation_cost_ratio` (0.05)
times the computation cost (the elements an op's devices read); it starts from the user's strategy (the greedy
inference with the user's SBP) unless `enable_auto_parallel_ignore_user_sbp_config`, which first removes the
parallel-cast ops (the user's `to_global` inside `build`), then improves it greedily, op by op
(`SbpGraph::GreedyStrategy`), and writes the chosen signatures back into the job.

This pass does that with this implementation's own prices: copy cost = the bytes the busiest rank sends
(`ops/transitions.cost`, what `explain` reports) plus the sbp inference's penalty for reading partial sums out of
a split, plus the wait time for each boxing that communicates; computation cost = the elements of each input's
piece on one device (a split halves it on 2 devices, a broadcast does not). Sweeps over the ops (at most 4, as
OneFlow's GreedyStrategy(4)) move one op at a time to the signature that lowers the cost of its input edges, its
output edges and its own computation, until no move helps; before them, one pass in job order chooses each op's
signature by its input edges and its computation alone (so that chains move to a split together). A strategy
dearer in total than the starting one is dropped for it. What stays pinned: the graph's
inputs and variables (their storage is the eager tensors'), every op whose SBP the user set (`to_global` inside
`build`, `grad_sbp`) unless the ignore flag is on, and ops whose layout another op derives (passthrough,
mirrored and view-cast ops and their producers). Parallelism never changes the numbers: only where boxing happens
changes. `enable_auto_parallel_trunk_algo` and `enable_auto_parallel_sbp_collector` (OneFlow's refinements of its
elimination-based search: trunk wait-time reduction, SBP proxies for multi-consumer blobs) are recorded and shown
in the report; this search has neither phase.
"""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ops import transitions
from oneflow_compat.ops.sbp_rules import signatures
from oneflow_compat.passes import sbp_infer

SWEEPS = 4  # OneFlow 0.9: sbp_graph_.GreedyStrategy(4)


class AutoParallelConf:
    """The settings of `graph.config` (OneFlow 0.9 job_conf.proto fields 700-705, with their defaults)."""

    def __init__(self):
        self.enable = False
        self.ignore_user_sbp_config = False
        self.computation_cost_ratio = 0.05
        self.wait_time = 1.65e4
        self.trunk_algo = True
        self.sbp_collector = False

    def items(self):
        return [("enable_auto_parallel", self.enable),
                ("enable_auto_parallel_ignore_user_sbp_config", self.ignore_user_sbp_config),
                ("auto_parallel_computation_cost_ratio", self.computation_cost_ratio),
                ("auto_parallel_wait_time", self.wait_time),
                ("enable_auto_parallel_trunk_algo", self.trunk_algo),
                ("enable_auto_parallel_sbp_collector", self.sbp_collector)]


class Summary:
    """What the search did, for `explain` and the graph's debug output."""

    def __init__(self, conf, initial, final, changed, sweeps, unpinned):
        self.conf, self.initial, self.final = conf, initial, final
        self.changed, self.sweeps, self.unpinned = changed, sweeps, unpinned

    def lines(self):
        settings = ", ".join("%s=%s" % (k, v) for k, v in self.conf.items()[1:])
        return ["auto parallel: cost %s -> %s (copy bytes + wait time + %g x computation), %d op(s) changed in %d "
                "sweep(s), %d user SBP setting(s) ignored" % (_fmt(self.initial), _fmt(self.final),
                                                              self.conf.computation_cost_ratio, len(self.changed),
                                                              self.sweeps, self.unpinned),
                "auto parallel settings: " + settings]


def _fmt(x):
    return "%.6g" % x


def _is_user_sbp(op):
    """An op carrying the user's SBP setting: the identity a `to_global` (or its `grad_sbp`) pins inside build
    (a compute op pinned on both sides; graph inputs and variables are ops of their own roles), which OneFlow's
    auto parallelism removes under the ignore flag (its parallel-cast ops)."""
    return op.defn.role == "compute" and bool(op.in_hints) and bool(op.out_hints)


def search(job, conf):
    """Improves the SBP signatures `sbp_infer.infer` chose for `job` (in place); returns a Summary (also kept as
    `job.auto_parallel_summary`)."""
    unpinned = 0
    if conf.ignore_user_sbp_config:
        for op in job.ops:
            if _is_user_sbp(op):
                op.in_hints, op.out_hints = {}, {}
                unpinned += 1
        sbp_infer.infer(job, exact_first=True)  # the start without the user's settings
    consumers = {}
    for op in job.ops:
        for j, x in enumerate(op.inputs):
            consumers.setdefault(x.key(), []).append((op, j))
    free = [op for op in job.ops if _searchable(op, consumers)]
    choices = {id(op): _allowed(op) for op in free}
    initial = total_cost(job, conf)
    start = {id(op): (op.sbp_in, op.sbp_out) for op in free}
    # a first pass in job order, each op priced with its inputs' edges and its computation (its consumers come
    # later): this is what lets a chain of ops move to a split together, which one-op moves cannot
    for op in free:
        best, best_cost = None, None
        for sig in choices[id(op)]:
            c = _forward_cost(op, sig, conf)
            if best is None or c < best_cost - 1e-9:
                best, best_cost = sig, c
        if best is not None:
            op.sbp_in, op.sbp_out = list(best[0]), list(best[1])
    sweeps = 0
    for sweeps in range(1, SWEEPS + 1):
        moved = False
        for op in free:
            here = _local_cost(op, (op.sbp_in, op.sbp_out), consumers, conf)
            best, best_cost = None, here
            for sig in choices[id(op)]:
                c = _local_cost(op, sig, consumers, conf)
                if c < best_cost - 1e-6 * max(1.0, abs(best_cost)):
                    best, best_cost = sig, c
            if best is not None:
                op.sbp_in, op.sbp_out = list(best[0]), list(best[1])
                moved = True
        if not moved:
            break
    final = total_cost(job, conf)
    if final > initial:  # the search never leaves a strategy dearer than the one it started from
        for op in free:
            op.sbp_in, op.sbp_out = start[id(op)]
        final = initial
    changed = [op.name for op in free if (op.sbp_in, op.sbp_out) != start[id(op)]]
    summary = Summary(conf, initial, final, changed, sweeps, unpinned)
    job.auto_parallel_summary = summary
    return summary


def _searchable(op, consumers):
    if op.placement.parallel_num == 1 or op.view == "mirrored" or op.defn.role == "variable":
        return False
    if op.defn.sbp == "passthrough" or op.defn.view_cast is not None or op.defn.role == "input":
        return False
    if op.in_hints or op.out_hints:  # the user's (or the graph's inputs') pinned layout
        return False
    for y in op.outputs:  # a consumer deriving its layout from this op's output keeps this op as it is
        for c, _ in consumers.get(y.key(), ()):
            if c.defn.sbp == "passthrough" or c.defn.view_cast is not None or c.view == "mirrored":
                return False
    return bool(signatures(op))


def _allowed(op):
    """The op's signatures (a searchable op has no hints to satisfy)."""
    return [sig for sig in signatures(op) if len(sig[0]) == len(op.inputs) and len(sig[1]) == len(op.outputs)]


def _produced(x):
    op = x.op
    s = op.sbp_out[x.index]
    return op.placement, (S.B if op.placement.parallel_num == 1 and s != S.M else s)


def _edge_cost(src_pl, src, dst_pl, want, x, conf):
    c = transitions.cost(src_pl, src, dst_pl, want, x.meta)
    if src_pl.parallel_num > 1 and sbp_infer._reads_partial_from_split(src, want):
        c += sbp_infer._partial_from_split(x.meta)
    if x.op.defn.role == "variable" and x.op.out_hints and want != src:
        c += sbp_infer._LAST_RESORT  # a pinned variable is read as it lies (sbp_infer's rule)
    if c > 0:
        c += conf.wait_time
    return c


def _local_elements(meta, sbp, placement):
    n = 1
    for d in meta.shape:
        n *= d
    if S.is_nd(sbp):
        for axis_sbp, size in zip(sbp.sbps, sbp.mesh):
            if S.is_split(axis_sbp):
                n /= size
    elif S.is_split(sbp):
        n /= placement.parallel_num
    return n


def _compute_cost(op, sig_in, conf):
    return conf.computation_cost_ratio * sum(_local_elements(x.meta, s, op.placement)
                                             for x, s in zip(op.inputs, sig_in))


def _forward_cost(op, sig, conf):
    sig_in = sig[0]
    cost = _compute_cost(op, sig_in, conf)
    for x, want in zip(op.inputs, sig_in):
        pl, s = _produced(x)
        cost += _edge_cost(pl, s, op.placement, want, x, conf)
    return cost


def _local_cost(op, sig, consumers, conf):
    """The terms of the total cost that depend on `op`'s signature: its input edges, its output edges (read as
    its consumers now read them) and its computation."""
    sig_in, sig_out = sig
    cost = _compute_cost(op, sig_in, conf)
    for x, want in zip(op.inputs, sig_in):
        pl, s = _produced(x)
        cost += _edge_cost(pl, s, op.placement, want, x, conf)
    for k, y in enumerate(op.outputs):
        for c, j in consumers.get(y.key(), ()):
            cost += _edge_cost(op.placement, sig_out[k], c.placement, c.sbp_in[j], y, conf)
    return cost


def total_cost(job, conf):
    """The strategy's cost: every edge's copy cost and every op's computation cost."""
    total = 0.0
    for op in job.ops:
        if op.placement.parallel_num > 1 and op.view != "mirrored":
            total += _compute_cost(op, op.sbp_in, conf)
        for x, want in zip(op.inputs, op.sbp_in):
            pl, s = _produced(x)
            if pl.parallel_num == 1 and op.placement.parallel_num == 1:
                continue
            total += _edge_cost(pl, s, op.placement, want, x, conf)
    return total
