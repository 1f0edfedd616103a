"""Fusion: chains of ops that one kernel computes faster, with the same values, become that one op.

* conv2d -> bias_add -> [relu]   becomes conv2d_bias_act: the bias and relu are applied to each chunk of the
  convolution's output while it is in cache, instead of two more passes over the whole tensor;
* matmul -> bias_add -> [relu]   becomes matmul_bias_act (the dense layer: the bias broadcast into the output, the
  product added onto it by the GEMM, relu in place);
* matmul -> relu_grad            becomes matmul_relu_grad (the gradient reaching a dense layer's relu, masked in
  place on the product);
* max_pool2d_grad -> relu_grad   becomes max_pool2d_relu_grad when the pool's input is the relu's output (the
  gradient of pool(relu(z)), LeNet's pattern): one pass instead of two;
* matmul -> SGD update           becomes matmul_sgd_update: the weight gradient's GEMM adds -lr·g straight into the
  weight (or the momentum), so the gradient is never made;
* reduce_sum -> SGD update       becomes reduce_sum_sgd_update (a bias gradient, summed into the bias).

The pass runs after SBP inference, so that on several devices a chain is fused exactly where the layout it was
given is one the fused op declares: the chain's inputs as they were read, its output as it was produced, no boxing
inside the chain (the fused op must not change what inference chose for anything around it). One exception is the
point of the update rules: a weight gradient of partial sums (data parallelism) that the update reads all-reduced
is fused when the variable's replicas on this process are one array and the whole placement is on this process —
every device then adds its partial product into that array, and the all-reduce is not needed.

A chain is fused only where nothing else can tell: every intermediate blob has the next op of the chain as its
only reader and is neither a job output nor a gradient the runtime reads (gradient accumulation, diff watches);
the ops share one placement and one view (and, but for the update rules, one section). The fused op takes the
name, the place in the job and the output blob of the chain's last op, so its readers (and the job's outputs) see
no change; an update's fused op runs where the update ran, after every reader of the old weight. Fused ops are
ordinary ops (`ops/nn_ops.py`, `ops/math_ops.py`, `ops/system_ops.py`; rows in `ops/examples.py`).

Every fused op runs on both kinds of device: on the host through BLAS and compiled loops, on a GPU through the CUDA
kernels of kernels/cuda_nn.py, cuda_loss.py and cuda_optim.py (the updates read their learning rate from a step
scalar there).

The patterns name the declarations they match (`registry.get("conv2d")`), resolved once; an op matches by its
declaration (`op.defn is ...`), never by its type name.

Max-pool before relu (exact, since max commutes with a monotone function) is not done: once relu is fused into
the convolution's epilogue it costs nothing to move.
"""
import functools

from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import Op
from oneflow_compat.ops import registry
from oneflow_compat.ops.variable_ops import shares_replicas
from oneflow_compat.passes import prune


class _Declarations:
    def __init__(self):
        for name in ("conv2d", "matmul", "bias_add", "relu", "max_pool2d_grad", "relu_grad", "reduce_sum",
                     "optimizer_update", "fill_like", "sparse_softmax_cross_entropy",
                     "sparse_softmax_cross_entropy_grad", "conv2d_bias_act", "matmul_bias_act", "matmul_relu_grad",
                     "max_pool2d_relu_grad", "matmul_sgd_update", "reduce_sum_sgd_update",
                     "sparse_softmax_cross_entropy_and_grad"):
            setattr(self, name, registry.get(name))


@functools.lru_cache(maxsize=None)
def _ops():
    return _Declarations()


def fuse(job):
    readers = {}
    for op in job.ops:
        for i, x in enumerate(op.inputs):
            readers.setdefault(x.key(), []).append((op, i))
    pinned = {blob.key() for blob, _ in job.output_blobs} | {blob.key() for blob, _ in job.diff_watches}
    if job.micro_batches > 1:
        pinned |= {g.key() for g in job.raw_grads}
    replaced = {}  # id(op) -> fused op standing at its place, or None: removed
    for op in list(job.ops):
        if id(op) in replaced:  # (fused kernels run on GPUs too: kernels/cuda_*.py, the device updates)
            continue
        for rule in (_conv_bias_act, _matmul_bias_act, _matmul_relu_grad, _pool_relu_grad, _loss_and_grad,
                     _matmul_update, _reduce_sum_update):
            found = rule(op, readers, pinned)
            if found is not None:
                old_keys = [y.key() for y in found.outputs]
                fused = _replace(job, found)
                for old in found.chain:
                    replaced[id(old)] = None
                replaced[id(found.chain[found.at])] = fused
                for old in found.chain:
                    for x in old.inputs:
                        readers[x.key()] = [r for r in readers[x.key()] if r[0] is not old]
                for i, x in enumerate(found.inputs):
                    readers.setdefault(x.key(), []).append((fused, i))
                for old_key, y in zip(old_keys, found.outputs):  # an output renumbered in the fused op
                    if old_key != y.key():
                        readers[y.key()] = readers.pop(old_key, [])
                        if old_key in pinned:
                            pinned.add(y.key())
                break
    if replaced:
        ops = []
        for op in job.ops:
            new = replaced.get(id(op), op)
            if new is not None:
                ops.append(new)
        job.ops = ops
        prune.prune(job)  # what only the fused chains read (the learning rate, once every update is fused)
        _run_updates_early(job)
    return job


def _run_updates_early(job):
    """Each fused update moves up to right after the last op it must follow: the ops computing its operands and
    every other reader of the variable (and momentum) it overwrites. Its operands are then still in cache, and the
    order of reads and writes of every variable is the one of running the updates last."""
    for update in [op for op in job.ops if op.defn in (_ops().matmul_sgd_update, _ops().reduce_sum_sgd_update)]:
        written = {update.inputs[0].key()} | ({update.inputs[-1].key()} if update.attrs["momentum"] else set())
        produced = {x.key() for x in update.inputs}
        last = 0
        for i, op in enumerate(job.ops):
            if op is update:
                break
            made = op.defn.role == "compute" and any(y.key() in produced for y in op.outputs)
            if made or any(x.key() in written for x in op.inputs):  # (variables and inputs hold from the start)
                last = i
        else:
            continue
        # variables (the step counter) it reads that were declared after that point move up with it
        sources = list(dict.fromkeys(x.op for x in update.inputs
                                     if x.op.defn.role != "compute" and job.ops.index(x.op) > last))
        for op in [update] + sources:
            job.ops.remove(op)
        job.ops[last + 1:last + 1] = sources + [update]


class _Fusion:
    """What a rule found: the chain, the fused op's declaration, inputs, attrs and input SBPs; the fused op stands
    at the place of chain[at] (default: the last op) with its name, and produces `outputs` (default: the last op's
    output) in the layouts their producers gave them."""

    def __init__(self, chain, defn, inputs, attrs, sbp_in, at=-1, outputs=None):
        self.chain, self.defn, self.inputs, self.attrs, self.sbp_in = chain, defn, inputs, attrs, list(sbp_in)
        self.at = at
        self.outputs = list(chain[-1].outputs) if outputs is None else outputs
        self.sbp_out = [y.op.sbp_out[y.index] for y in self.outputs]


def _only_reader(blob, readers, pinned):
    """The (op, input index) reading `blob`, when exactly one op reads it once and nothing else needs it."""
    found = readers.get(blob.key(), ())
    if blob.key() in pinned or len(found) != 1:
        return None
    return found[0]


def _next_in_chain(op, defn, index, readers, pinned):
    """The op of declaration `defn` that alone reads op's output, as its input `index`, in the layout op produced it
    (no boxing between them)."""
    found = _only_reader(op.outputs[0], readers, pinned)
    if found is None or found[0].defn is not defn or found[1] != index:
        return None
    reader = found[0]
    same = reader.placement == op.placement and reader.view == op.view
    return reader if same and reader.sbp_in[index] == op.sbp_out[0] else None


def _fusable(ops):
    first = ops[0]
    return all(op.placement == first.placement and op.view == first.view and op.section == first.section
               and len(op.outputs) == 1 and op.outputs[0].dtype.is_floating for op in ops)


def _declared(found):
    """`found` when the fused op declares the layout the chain was given (always, on one device; mirrored ops hold
    per-device values whatever op computes them), else None."""
    site = found.chain[found.at]
    if site.placement.parallel_num == 1 or all(s == S.M for s in found.sbp_in + found.sbp_out):
        return found
    probe = Op(site.job, site.name, found.defn.type, found.defn, found.inputs, found.attrs, site.placement, site.view)
    probe.outputs = found.outputs
    sigs = [(tuple(a), tuple(b)) for a, b in found.defn.sbp(probe)]
    return found if (tuple(found.sbp_in), tuple(found.sbp_out)) in sigs else None


def _epilogue(op, readers, pinned, bias_axis):
    """The bias_add (on `bias_axis`) reading op's output and the relu reading the bias_add's, if any."""
    bias_add = _next_in_chain(op, _ops().bias_add, 0, readers, pinned)
    if bias_add is None or bias_add.attrs["axis"] % len(bias_add.inputs[0].shape) != bias_axis:
        return None
    chain, activation = [op, bias_add], None
    relu = _next_in_chain(bias_add, _ops().relu, 0, readers, pinned)
    if relu is not None and _fusable(chain + [relu]):
        chain.append(relu)
        activation = "relu"
    return (chain, activation) if _fusable(chain) else None


def _conv_bias_act(op, readers, pinned):
    if op.defn is not _ops().conv2d:
        return None
    found = _epilogue(op, readers, pinned, 1 if op.attrs["data_format"] == "NCHW" else 3)
    if found is None:
        return None
    chain, activation = found
    return _declared(_Fusion(chain, _ops().conv2d_bias_act, op.inputs + [chain[1].inputs[1]],
                             dict(op.attrs, activation=activation), op.sbp_in + [chain[1].sbp_in[1]]))


def _matmul_attrs(op):
    return {"transpose_a": op.attrs["transpose_a"], "transpose_b": op.attrs["transpose_b"],
            "alpha": op.attrs.get("alpha", 1.0)}


def _matmul_bias_act(op, readers, pinned):
    if op.defn is not _ops().matmul or len(op.inputs[0].shape) != 2:
        return None
    found = _epilogue(op, readers, pinned, 1)
    if found is None:
        return None
    chain, activation = found
    return _declared(_Fusion(chain, _ops().matmul_bias_act, op.inputs + [chain[1].inputs[1]],
                             dict(_matmul_attrs(op), activation=activation), op.sbp_in + [chain[1].sbp_in[1]]))


def _matmul_relu_grad(op, readers, pinned):
    if op.defn is not _ops().matmul or len(op.inputs[0].shape) != 2:
        return None
    relu_grad = _next_in_chain(op, _ops().relu_grad, 0, readers, pinned)
    if relu_grad is None or not _fusable([op, relu_grad]):
        return None
    return _declared(_Fusion([op, relu_grad], _ops().matmul_relu_grad, op.inputs + [relu_grad.inputs[1]],
                             _matmul_attrs(op), op.sbp_in + [relu_grad.sbp_in[1]]))


def _pool_relu_grad(op, readers, pinned):
    if op.defn is not _ops().max_pool2d_grad:
        return None
    relu_grad = _next_in_chain(op, _ops().relu_grad, 0, readers, pinned)
    # relu_grad masks by the relu's output; the pool's input must be that very blob, in the same layout
    if relu_grad is None or relu_grad.inputs[1].key() != op.inputs[1].key() or \
            relu_grad.sbp_in[1] != op.sbp_in[1] or not _fusable([op, relu_grad]):
        return None
    return _declared(_Fusion([op, relu_grad], _ops().max_pool2d_relu_grad, list(op.inputs), dict(op.attrs),
                             list(op.sbp_in)))


def _loss_and_grad(op, readers, pinned):
    """The loss and its gradient in one op, standing where the loss was computed, when its probabilities are read
    by its gradient alone and the loss gradient is backward's constant seed (a fill of the loss's shape)."""
    if op.defn is not _ops().sparse_softmax_cross_entropy:
        return None
    found = _only_reader(op.outputs[1], readers, pinned)
    if found is None or found[0].defn is not _ops().sparse_softmax_cross_entropy_grad or found[1] != 1:
        return None
    grad = found[0]
    seed = grad.inputs[0].op
    if seed.defn is not _ops().fill_like or seed.inputs[0].key() != op.outputs[0].key() or \
            _only_reader(seed.outputs[0], readers, pinned) != (grad, 0) or grad.inputs[2].key() != op.inputs[1].key():
        return None
    chain = [op, seed, grad]
    same = all(o.placement == op.placement and o.view == op.view for o in chain)
    linked = grad.sbp_in == [seed.sbp_out[0], op.sbp_out[1], op.sbp_in[1]]
    if not same or not linked:
        return None
    return _declared(_Fusion(chain, _ops().sparse_softmax_cross_entropy_and_grad, list(op.inputs),
                             {"seed": float(seed.attrs["value"])}, op.sbp_in, at=0,
                             outputs=[op.outputs[0], grad.outputs[0]]))


# --- updates -----------------------------------------------------------------------------------------------------
def _sgd_update_reading(op, readers, pinned):
    """The optimizer update that alone reads op's output as its gradient, when it is SGD with no weight decay and
    no dynamic loss scaling (w ← w − c·g, or with momentum m ← β·m − c·g, w ← w + m), and reads the gradient as op
    made it or as the all-reduce of op's partial sums that one shared array makes unnecessary; with its momentum."""
    found = _only_reader(op.outputs[0], readers, pinned)
    if found is None or found[0].defn is not _ops().optimizer_update or found[1] != 1:
        return None
    update = found[0]
    momentum_of = getattr(update.attrs["optimizer"], "linear_update_momentum", None)
    momentum = momentum_of() if momentum_of is not None else None
    n_states = update.attrs.get("n_states", len(update.inputs) - 4)
    if momentum is None or update.attrs["weight_decay"] != 0 or n_states != (1 if momentum else 0) or \
            len(update.inputs) != 4 + n_states or update.placement != op.placement:
        return None
    w, g = update.inputs[0], update.inputs[1]
    if w.dtype != g.dtype or not g.dtype.is_floating or op.view != "consistent" or update.view != "consistent":
        return None
    made, read, pl = op.sbp_out[0], update.sbp_in[1], op.placement
    if made != read:
        whole = len({machine for machine, _ in pl.pairs}) == 1
        if not (made == S.P and read == S.B and update.sbp_in[0] == S.B and shares_replicas(pl, S.B) and whole):
            return None
    return update, momentum


def _sgd_update_parts(op, readers, pinned):
    """The SGD update that `_sgd_update_reading` finds for op's result (None: none), its momentum flag, and the
    inputs the fused op keeps with their layouts: the variable, the step counter (its learning rate comes from the
    schedule, as the update reads it) and the momentum."""
    found = _sgd_update_reading(op, readers, pinned)
    if found is None:
        return None
    update, momentum = found
    w, step = update.inputs[0], update.inputs[3]
    extra = [update.inputs[4]] if momentum else []
    extra_sbp = [update.sbp_in[4]] if momentum else []
    return update, momentum, w, step, extra, extra_sbp


def _matmul_update(op, readers, pinned):
    if op.defn is not _ops().matmul or len(op.inputs[0].shape) != 2:
        return None
    found = _sgd_update_parts(op, readers, pinned)
    if found is None:
        return None
    update, momentum, w, step, extra, extra_sbp = found
    attrs = dict(_matmul_attrs(op), scale=update.attrs.get("grad_scale", 1.0), momentum=momentum,
                 var=update.attrs["var"], optimizer=update.attrs["optimizer"])
    sbp_in = [update.sbp_in[0]] + op.sbp_in + [update.sbp_in[3]] + extra_sbp
    return _declared(_Fusion([op, update], _ops().matmul_sgd_update, [w] + op.inputs + [step] + extra, attrs,
                             sbp_in))


def _reduce_sum_update(op, readers, pinned):
    if op.defn is not _ops().reduce_sum or op.attrs.get("keepdims", False):
        return None
    found = _sgd_update_parts(op, readers, pinned)
    if found is None:
        return None
    update, momentum, w, step, extra, extra_sbp = found
    nd = len(op.inputs[0].shape)
    axis = op.attrs["axis"]
    axis = sorted(a % nd for a in (range(nd) if axis is None else axis))
    attrs = {"axis": axis, "scale": update.attrs.get("grad_scale", 1.0), "momentum": momentum,
             "var": update.attrs["var"], "optimizer": update.attrs["optimizer"]}
    sbp_in = [update.sbp_in[0]] + op.sbp_in + [update.sbp_in[3]] + extra_sbp
    return _declared(_Fusion([op, update], _ops().reduce_sum_sgd_update, [w] + op.inputs + [step] + extra, attrs,
                             sbp_in))


def _replace(job, found):
    """The fused op, named as the op whose place it takes, producing the chain's outputs in their layouts."""
    site = found.chain[found.at]
    fused = Op(job, site.name, found.defn.type, found.defn, found.inputs, found.attrs, site.placement, site.view)
    fused.section = site.section
    fused.outputs = found.outputs
    fused.sbp_in, fused.sbp_out = found.sbp_in, found.sbp_out
    for i, y in enumerate(fused.outputs):
        y.op, y.index = fused, i
    for old in found.chain:
        del job.op_names[old.name]
    job.op_names[site.name] = fused
    return fused
