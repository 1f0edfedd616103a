"""nn.Graph's `config.enable_amp(True)`: OneFlow 0.9's AutoMixedPrecision job pass
(`oneflow/core/job_rewriter/auto_mixed_precision.cpp` @ v0.9.0) over a job's forward and backward ops; and the legacy
`func_config.enable_auto_mixed_precision(True)`: the same pass as v0.4.0 ran it (at that tag), with v0.4's rules
(`amp_lists.V04`, the `rules` parameter) on the forward ops alone, before the backward is built (the end of this
docstring).

In 0.9 the pass runs on the job as the build traced it — forward and backward ops, before the optimizer's ops exist
(`job_build_and_infer_ctx.cpp`: AutoMixedPrecision before GenerateOptimizerOpConfs) — so here it runs after the
optimizer pass and pruning, on the ops of the forward and backward sections only; the optimizer's ops are no part of
the colouring and compute in float32 as 0.9's, which are added after it. Only ops on CUDA placements with outputs
may compute in float16 (`MakePredicatorIsAllowedToRunWithHalf`): a CPU graph is left as it is.

The colouring, with the colours of `ops/amp_lists.py` (an op declaration's `amp_color`), each step one topological
traversal whose "fathers" are the producers (forward) or the consumers (reversed), as 0.9's DfsTopoGraphTraversal:

1. black set: (reversed) the black- and gray-list ops and the clear ops some consumer of which is one of them;
   then (forward) the black-list ops and the ops of that set some producer of which is black;
2. white set: (reversed) the white ops allowed half, the gray/clear sinks allowed half, and the gray/clear ops
   allowed half, not black, some consumer of which is in that set; then (forward) the white ops allowed half and
   the ops of that set some producer of which is white;
3. clear ops allowed half, not black, next to a white op become white: downward (a producer white), then upward
   (a consumer white).

So gray and clear ops between white ones compute in float16, the rest in float32. What 0.9's job has beside the
ops, modelled here: each variable gradient is read by a clear `pinned_identity` with no consumer
(InsertPinnedIdentityOpPass), each output of the graph by its output op (on no list); an input read for its shape
alone where 0.9's op reads no blob (`amp_shape_only`: the reshape gradient) is no edge.

Then casts, one per blob (0.9's InsertCastOpImpl, grouped by logical blob name): a float32 blob a white op reads
from a non-white producer goes through `cast` to float16 (`<op>-<blob>-cast_f2h`, on the producer's placement,
right after it), and a white op's float32 output that a non-white op, the optimizer or the graph's outputs read
goes through `cast` back to float32 (`-cast_h2f`). Inputs 0.9 never casts (`amp_no_cast`: normalization's
statistics and affine parameters) keep their blob. The white ops' output dtypes are inferred again. A variable
gradient a white op computed is cast back to float32 before the optimizer reads it (0.9's AddDiffHalf2FloatCast in
GenerateOptimizerOpConfs: same cast), so parameters, optimizer states and the gradients gradient accumulation sums
stay float32.

v0.4 (`rules=amp_lists.V04`, `passes/pipeline.py` runs it before the optimizer pass): the same colouring and casts
with v0.4's lists (no gradient op on them, an empty black list), without the gray/clear sinks as white starts (0.9
added them), over the forward ops as traced — the only ops there are then, as v0.4's AutoMixedPrecision ran before
GenerateBackwardAndOptimizerOpConfs (`job_build_and_infer_ctx.cpp` @ v0.4.0). The backward is then built from the
rewritten forward: each gradient op computes in its forward op's dtype, and a cast's gradient is the cast back, so a
variable's gradient reaches the optimizer in float32 through the gradient of its `-cast_f2h`. v0.4 CHECKs that the
job's default data type is float32 (AutoMixedPrecision::Apply); here an error names the option.
"""
from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import LazyBlob, Op
from oneflow_compat.ops import amp_lists, registry

_OPTIMIZER = "optimizer"


class _Virtual:
    """A node 0.9's job has and this one does not: a variable gradient's pinned identity, a graph output's op."""

    def __init__(self, color, allowed):
        self.color, self.allowed = color, allowed
        self.black_listed = False


def _allowed_half(op):
    return op.placement is not None and op.placement.device_tag == "gpu" and bool(op.outputs)


class _Graph:
    """The forward and backward ops (and the virtual nodes) with their producer and consumer edges."""

    def __init__(self, job, rules):
        self.nodes = [op for op in job.ops if op.section != _OPTIMIZER]
        members = {id(op) for op in self.nodes}
        self.producers = {id(op): [] for op in self.nodes}
        self.consumers = {id(op): [] for op in self.nodes}
        for op in self.nodes:
            shape_only = op.defn.amp_rules(rules).shape_only  # no edge in 0.9's op graph (ops/amp_lists.py)
            for i, x in enumerate(op.inputs):
                p = x.op
                if id(p) in members and p is not op and i not in shape_only:
                    self._edge(p, op)
        grads = {g.key(): g for g in job.raw_grads}
        outputs = {b.key(): b for b, _ in job.output_blobs}
        for blobs, color, sink_allowed in ((grads, amp_lists.CLEAR, True), (outputs, amp_lists.BLACK, False)):
            for blob in blobs.values():
                if id(blob.op) not in members:
                    continue
                v = _Virtual(color, sink_allowed and _allowed_half(blob.op))
                self.nodes.append(v)
                self.producers[id(v)], self.consumers[id(v)] = [], []
                self._edge(blob.op, v)

    def _edge(self, src, dst):
        if all(p is not src for p in self.producers[id(dst)]):
            self.producers[id(dst)].append(src)
            self.consumers[id(src)].append(dst)

    def traverse(self, reverse, is_start, is_satisfied, father_ok, handle):
        """0.9's DfsTopoGraphTraversal: in topological order (job order; reversed from the sinks), a start node is
        handled, and a satisfied node is handled when one of its fathers is satisfied."""
        fathers = self.consumers if reverse else self.producers
        for node in (reversed(self.nodes) if reverse else self.nodes):
            if is_start(node):
                handle(node)
            elif is_satisfied(node) and any(father_ok(f) for f in fathers[id(node)]):
                handle(node)


def _check_default_data_type(job):
    """v0.4's AutoMixedPrecision::Apply: CHECK(GlobalJobDesc().DefaultDataType() == DataType::kFloat) — in CUDA
    builds, the only ones that had the pass: checked where the job has an op on a GPU."""
    config = job.config
    default = getattr(config, "default_data_type_", dtypes.float32)
    if default is not dtypes.float32 and any(_allowed_half(op) for op in job.ops):
        raise ValueError("job '%s': enable_auto_mixed_precision needs function_config.default_data_type(flow.float) "
                         "(OneFlow's AutoMixedPrecision pass checks it), got %s" % (job.name, default))


def _allowed(node):
    return node.allowed if isinstance(node, _Virtual) else _allowed_half(node)


def white_set(job, rules=amp_lists.V09):
    """The ops (and virtual nodes) that compute in the mixed-precision dtype: the colouring of the module
    docstring, by `rules` (`amp_lists.V09` or `amp_lists.V04`)."""
    graph = _Graph(job, rules)

    def _color(node):
        return node.color if isinstance(node, _Virtual) else node.defn.amp_rules(rules).color

    def _black_listed(node):
        return node.black_listed if isinstance(node, _Virtual) else node.defn.amp_rules(rules).black_listed

    gray_or_clear = lambda n: _color(n) in (amp_lists.GRAY, amp_lists.CLEAR)  # noqa: E731

    up_black = set()
    graph.traverse(True, lambda n: _black_listed(n) or _color(n) == amp_lists.GRAY,
                   lambda n: _color(n) == amp_lists.CLEAR, lambda f: id(f) in up_black,
                   lambda n: up_black.add(id(n)))
    black = set()
    graph.traverse(False, _black_listed, lambda n: id(n) in up_black, lambda f: id(f) in black,
                   lambda n: black.add(id(n)))

    up_white = set()
    graph.traverse(True, lambda n: _allowed(n) and (_color(n) == amp_lists.WHITE or (
        rules.sinks_start_white and not graph.consumers[id(n)] and gray_or_clear(n))),
        lambda n: id(n) not in black and _allowed(n) and gray_or_clear(n), lambda f: id(f) in up_white,
        lambda n: up_white.add(id(n)))
    white = set()
    graph.traverse(False, lambda n: _allowed(n) and _color(n) == amp_lists.WHITE, lambda n: id(n) in up_white,
                   lambda f: id(f) in white, lambda n: white.add(id(n)))

    for reverse in (False, True):  # PropagateWhiteThroughClearNodes: downward, then upward
        graph.traverse(reverse, lambda n: False,
                       lambda n: id(n) not in white and id(n) not in black and _color(n) == amp_lists.CLEAR
                       and _allowed(n), lambda f: id(f) in white, lambda n: white.add(id(n)))
    return [op for op in job.ops if id(op) in white]


def apply(job, dtype=dtypes.float16, rules=amp_lists.V09):
    """Rewrites `job` (in place) to compute its white ops in `dtype` (float16 or bfloat16), casting at the colour
    boundaries (module docstring), by `rules` (`amp_lists.V09`: nn.Graph; `amp_lists.V04`: the legacy API, before
    the backward). Returns the white ops."""
    if rules.before_backward:
        _check_default_data_type(job)
    white = white_set(job, rules)
    if not white:
        return white
    is_white = {id(op) for op in white}
    original = {}  # blob key -> its dtype before the pass (0.9 casts float32 blobs alone)
    for op in job.ops:
        for y in op.outputs:
            original[y.key()] = y.meta.dtype
    casts = {}  # (blob key, direction) -> cast output
    inserted = {}  # id(producer) -> the casts of its outputs

    def cast(blob, to, suffix):
        key = (blob.key(), suffix)
        if key not in casts:
            producer = blob.op
            name = "%s-%s-%s" % (producer.name, blob.blob_name, suffix)  # 0.9: `<lbn, '/' as '-'>-cast_f2h`
            if name in job.op_names:
                name = job.unique_name(name)
            op = Op(job, name, "cast", registry.get("cast"), [blob], {"dtype": to}, producer.placement,
                    producer.view)
            op.section = producer.section
            if blob.hint is not None:
                op.in_hints[0] = blob.hint
            op.outputs = [LazyBlob(op, 0, m) for m in op.defn.infer(op)]
            job.op_names[name] = op
            inserted.setdefault(id(producer), []).append(op)
            casts[key] = op.outputs[0]
        return casts[key]

    # float32 inputs of white ops from non-white producers: to `dtype`; then the white ops' outputs take it
    for op in white:
        info = op.defn.amp_rules(rules)
        skip = info.no_cast | info.shape_only
        new = list(op.inputs)
        for i, x in enumerate(op.inputs):
            if i in skip or id(x.op) in is_white or original.get(x.key(), x.meta.dtype) is not dtypes.float32:
                continue
            new[i] = cast(x, dtype, "cast_f2h")
        op.inputs = new
        for y, meta in zip(op.outputs, op.defn.infer(op)):
            y.meta = meta

    # float32 outputs of white ops read elsewhere: back to float32 (non-white ops, the optimizer, the outputs)
    def back(x):
        if id(x.op) in is_white and original.get(x.key()) is dtypes.float32 and x.meta.dtype is not dtypes.float32:
            return cast(x, dtypes.float32, "cast_h2f")
        return x

    for op in list(job.ops):
        if id(op) in is_white:
            continue
        info = op.defn.amp_rules(rules)
        skip = info.no_cast | info.shape_only  # (a shape is the same in either dtype)
        op.inputs = [x if i in skip else back(x) for i, x in enumerate(op.inputs)]
    job.output_blobs = [(back(b), kind) for b, kind in job.output_blobs]
    job.raw_grads = [back(g) for g in job.raw_grads]
    job.losses = [back(l) for l in job.losses]

    # each cast right after its producer (inputs and variables included), in the order they were made
    ops = []
    for op in job.ops:
        ops.append(op)
        ops.extend(inserted.get(id(op), ()))
    job.ops[:] = ops
    return white
