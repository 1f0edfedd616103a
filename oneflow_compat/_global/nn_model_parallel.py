"""OneFlow 0.9's model-parallel modules beyond the reference pages (api-misc2): `nn.DistributedPariticalFCSample`
(sic, OneFlow's spelling) with `flow.distributed_partial_fc_sample` on tensors, `nn.AllReduce` and
`flow._C.local_all_reduce`.

* Partial FC sampling (python/oneflow/nn/modules/distributed_partial_fc_sample.py, v0.9.0): the legacy API's
  `distributed_partial_fc_sample` op (ops/random_ops.py, OneFlow's partial_fc_sample kernel) on tensors: from a
  classifier weight split by class over the ranks (S(0)) and a broadcast label, each rank keeps the classes its
  share of the batch's labels hit, plus random others, `num_sample / ranks` in all; the outputs are
  (mapped_label: the labels renumbered into the sampled classes, broadcast; sampled_label and sampled_weight,
  split(0)). Its gradient scatters the sampled rows' gradients back into the weight. Local tensors are one rank's
  view (every class sampled per rank).
* `nn.AllReduce(parallel_conf_str)` (python/oneflow/nn/modules/all_reduce.py, v0.9.0) sums a local tensor over
  the ranks its parallel conf names (the text form of OneFlow's ParallelConf: `device_tag: "gpu" device_name:
  "0:0-1"`, machine:devices; rank = machine × local devices + device). OneFlow 0.9's forward reads an undefined
  name (`parallel_conf`) and so raises NameError for every input; here it does what the module was written to
  do, through the `eager_ccl_all_reduce` op (`flow._C.local_all_reduce`'s, ops/rank_collective_ops.py), eager
  or inside nn.Graph: one all-reduce among those ranks only (the others need not call it); its gradient is the
  same sum of the output gradients. OneFlow asserts the tensor is on cuda; here any device runs.
"""
import re
import warnings

from oneflow_compat.ops import random_ops, rank_collective_ops  # noqa: F401 (the ops)
from oneflow_compat.runtime import global_eager
from oneflow_compat._global.dispatch import apply_op, apply_op_list
from oneflow_compat._global.modules import Module
from oneflow_compat._global.tensor import Tensor


class DistributedPariticalFCSample(Module):
    def __init__(self, num_sample):
        super().__init__()
        self.num_sample = num_sample

    def forward(self, weight, label):
        for what, t in (("weight", weight), ("label", label)):
            if not isinstance(t, Tensor):
                raise TypeError("DistributedPariticalFCSample: %s must be a Tensor, got %s" % (what, type(t).__name__))
        if weight.is_global != label.is_global:
            raise ValueError("DistributedPariticalFCSample: weight and label must both be local or both global")
        if int(self.num_sample) > weight.shape[0]:  # (OneFlow's kernel leaves this unchecked)
            raise ValueError("DistributedPariticalFCSample: num_sample (%d) exceeds the number of classes, weight's "
                             "first dimension (%d)" % (self.num_sample, weight.shape[0]))
        return tuple(apply_op_list("distributed_partial_fc_sample", [weight, label],
                                   {"num_sample": int(self.num_sample), "seed": None}))

    def extra_repr(self):
        return "num_sample=%s" % (self.num_sample,)


def distributed_partial_fc_sample(weight, label, num_sample):
    """OneFlow 0.9's deprecated function form of the module (a DeprecationWarning, then the module's result)."""
    warnings.warn("oneflow.distributed_partial_fc_sample is deprecated. Please use nn.DistributedPariticalFCSample "
                  "module instead.", DeprecationWarning)
    return DistributedPariticalFCSample(num_sample)(weight, label)


_DEVICE_NAME = re.compile(r'device_name\s*:\s*"(\d+):(\d+)(?:-(\d+))?"')


def ranks_of_parallel_conf(parallel_conf_str):
    """The world ranks a ParallelConf's text names, ascending (each `device_name: "M:D"` or `"M:D0-D1"`)."""
    if not isinstance(parallel_conf_str, str):
        raise TypeError("AllReduce: parallel_conf_str must be the text of a ParallelConf, got %s"
                        % type(parallel_conf_str).__name__)
    found = _DEVICE_NAME.findall(parallel_conf_str)
    if not found:
        raise ValueError('AllReduce: parallel_conf_str names no devices (expected entries like device_name: "0:0-1"),'
                         " got %r" % parallel_conf_str)
    per_node = max(1, global_eager.world_size() // max(1, _node_size()))
    ranks = set()
    for machine, first, last in found:
        lo, hi = int(first), int(last) if last else int(first)
        if hi < lo:
            raise ValueError("AllReduce: device range %s-%s in %r runs backwards" % (first, last, parallel_conf_str))
        ranks.update(int(machine) * per_node + d for d in range(lo, hi + 1))
    world = global_eager.world_size()
    bad = sorted(r for r in ranks if r >= world)
    if bad:
        raise ValueError("AllReduce: parallel_conf_str %r names rank(s) %s, but the job has %d rank(s)"
                         % (parallel_conf_str, bad, world))
    return tuple(sorted(ranks))


def _node_size():
    from oneflow_compat import env

    return env.get_node_size()


def local_all_reduce(x, ranks=None):
    """The sum of local tensor `x` over `ranks` (all ranks by default), a new tensor on every one of them."""
    if not isinstance(x, Tensor) or not x.is_local:
        raise TypeError("local_all_reduce: expected a local tensor, got %s"
                        % ("a global tensor" if isinstance(x, Tensor) else type(x).__name__))
    ranks = tuple(range(global_eager.world_size())) if ranks is None else tuple(ranks)
    if global_eager.rank() not in ranks:
        raise ValueError("local_all_reduce: this rank (%d) is not among the ranks %s it sums over"
                         % (global_eager.rank(), list(ranks)))
    return apply_op("eager_ccl_all_reduce", [x], {"ranks": tuple(sorted(set(ranks)))})


class AllReduce(Module):
    def __init__(self, parallel_conf_str):
        super().__init__()
        self.parallel_conf = parallel_conf_str
        self._ranks = ranks_of_parallel_conf(parallel_conf_str)

    def forward(self, x):
        return local_all_reduce(x, self._ranks)
