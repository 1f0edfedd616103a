"""Fusion: chains of ops that one kernel computes faster, with the same values, become that one op.

* conv2d -> bias_add -> [relu]   becomes conv2d_bias_act: the bias and relu are applied to each chunk of the
  convolution's output while it is in cache, instead of two more passes over the whole tensor;
* matmul -> bias_add -> [relu]   becomes matmul_bias_act (the dense layer's epilogue, in place on the product);
* max_pool2d_grad -> relu_grad   becomes max_pool2d_relu_grad when the pool's input is the relu's output (the
  gradient of pool(relu(z)), LeNet's pattern): one pass instead of two.

A chain is fused only where nothing else can tell: every intermediate blob has the next op of the chain as its
only reader and is neither a job output nor a gradient the runtime reads (gradient accumulation); the ops share one
placement of ONE device, one view and one section, and carry no SBP hints (on several devices the fused op's SBP
signatures would constrain inference differently from the chain's). The fused op takes the name and the output
blob of the chain's last op, so its readers (and the job's outputs) see no change. Fused ops are ordinary ops
(`ops/nn_ops.py`, kernels in `kernels/nn.py`, rows in `ops/examples.py`).

The patterns name the declarations they match (`registry.get("conv2d")`), resolved once; an op matches by its
declaration (`op.defn is ...`), never by its type name.

Max-pool before relu (exact, since max commutes with a monotone function) is not done: once relu is fused into
the convolution's epilogue it costs nothing to move.
"""
import functools

from oneflow_compat.ir.graph import Op
from oneflow_compat.ops import registry


class _Declarations:
    def __init__(self):
        for name in ("conv2d", "matmul", "bias_add", "relu", "max_pool2d_grad", "relu_grad", "conv2d_bias_act",
                     "matmul_bias_act", "max_pool2d_relu_grad"):
            setattr(self, name, registry.get(name))


@functools.lru_cache(maxsize=None)
def _ops():
    return _Declarations()


def fuse(job):
    readers = {}
    for op in job.ops:
        for i, x in enumerate(op.inputs):
            readers.setdefault(x.key(), []).append((op, i))
    pinned = {blob.key() for blob, _ in job.output_blobs} | {g.key() for g in job.raw_grads}
    pinned |= {blob.key() for blob, _ in job.diff_watches}
    replaced = {}  # id(op) -> fused op standing at its place, or None: removed
    for op in list(job.ops):
        if id(op) in replaced:
            continue
        for rule in (_conv_bias_act, _matmul_bias_act, _pool_relu_grad):
            found = rule(op, readers, pinned)
            if found is not None:
                chain, defn, inputs, attrs = found
                fused = _replace(job, chain, defn, inputs, attrs)
                for old in chain[:-1]:
                    replaced[id(old)] = None
                replaced[id(chain[-1])] = fused
                for old in chain:
                    for x in old.inputs:
                        readers[x.key()] = [r for r in readers[x.key()] if r[0] is not old]
                for i, x in enumerate(inputs):
                    readers.setdefault(x.key(), []).append((fused, i))
                break
    if replaced:
        ops = []
        for op in job.ops:
            new = replaced.get(id(op), op)
            if new is not None:
                ops.append(new)
        job.ops = ops
    return job


def _only_reader(blob, readers, pinned):
    """The op reading `blob`, when exactly one op reads it once and nothing else needs it."""
    found = readers.get(blob.key(), ())
    if blob.key() in pinned or len(found) != 1:
        return None
    return found[0]


def _fusable(ops):
    first = ops[0]
    return (first.placement.parallel_num == 1
            and all(op.placement == first.placement and op.view == first.view and op.section == first.section
                    and not op.in_hints and not op.out_hints and not op.grad_hints
                    and len(op.outputs) == 1 and op.outputs[0].dtype.is_floating for op in ops))


def _epilogue(op, readers, pinned, bias_axis):
    """The bias_add (on `bias_axis`) reading op's output and the relu reading the bias_add's, if any."""
    found = _only_reader(op.outputs[0], readers, pinned)
    if found is None or found[0].defn is not _ops().bias_add or found[1] != 0:
        return None
    bias_add = found[0]
    if bias_add.attrs["axis"] % len(bias_add.inputs[0].shape) != bias_axis:
        return None
    chain, activation = [op, bias_add], None
    found = _only_reader(bias_add.outputs[0], readers, pinned)
    if found is not None and found[0].defn is _ops().relu and _fusable(chain + [found[0]]):
        chain.append(found[0])
        activation = "relu"
    return (chain, activation) if _fusable(chain) else None


def _conv_bias_act(op, readers, pinned):
    if op.defn is not _ops().conv2d:
        return None
    found = _epilogue(op, readers, pinned, 1 if op.attrs["data_format"] == "NCHW" else 3)
    if found is None:
        return None
    chain, activation = found
    return chain, _ops().conv2d_bias_act, op.inputs + [chain[1].inputs[1]], dict(op.attrs, activation=activation)


def _matmul_bias_act(op, readers, pinned):
    if op.defn is not _ops().matmul or len(op.inputs[0].shape) != 2:
        return None
    found = _epilogue(op, readers, pinned, 1)
    if found is None:
        return None
    chain, activation = found
    attrs = {"transpose_a": op.attrs["transpose_a"], "transpose_b": op.attrs["transpose_b"],
             "alpha": op.attrs.get("alpha", 1.0), "activation": activation}
    return chain, _ops().matmul_bias_act, op.inputs + [chain[1].inputs[1]], attrs


def _pool_relu_grad(op, readers, pinned):
    if op.defn is not _ops().max_pool2d_grad:
        return None
    found = _only_reader(op.outputs[0], readers, pinned)
    if found is None or found[0].defn is not _ops().relu_grad or found[1] != 0:
        return None
    relu_grad = found[0]
    # relu_grad masks by the relu's output; the pool's input must be that very blob
    if relu_grad.inputs[1].key() != op.inputs[1].key() or not _fusable([op, relu_grad]):
        return None
    return [op, relu_grad], _ops().max_pool2d_relu_grad, list(op.inputs), dict(op.attrs)


def _replace(job, chain, defn, inputs, attrs):
    """The fused op, named as the chain's last op and producing its very output blob."""
    last = chain[-1]
    fused = Op(job, last.name, defn.type, defn, inputs, attrs, last.placement, last.view)
    fused.section = last.section
    fused.outputs = list(last.outputs)
    for y in fused.outputs:
        y.op = fused
    for old in chain[:-1]:
        del job.op_names[old.name]
    job.op_names[last.name] = fused
    return fused
