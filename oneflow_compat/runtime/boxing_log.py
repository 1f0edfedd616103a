"""The records of boxing an eager process took part in (`context.boxing_log`, read by `explain`): kept below
`global_eager` so that the gradient buckets (`buckets.py`), which global_eager's backward uses, record their
all-reduces without importing it back."""
import collections

from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ops import transitions
from oneflow_compat.runtime import context


class BoxingRecord(collections.namedtuple("BoxingRecord", "op shape dtype src_placement src_sbp dst_placement "
                                                           "dst_sbp collective bytes")):
    """One boxing an eager op performed (per call: `bytes`)."""


def record_bucket_all_reduce(placement, elements, np_dtype, shapes=()):
    """Logs the all-reduce of one gradient bucket (`runtime/buckets.py`: the partial-sum gradients of a step summed
    in one flat buffer, instead of a boxing op per gradient), so that `explain` lists it, labelled as gradients,
    with the bytes the transition table gives that all-reduce of the flat buffer: what ran. `shapes`: the gradients
    it holds, named in the row."""
    log(bucket_record(placement, elements, np_dtype, shapes))


def bucket_record(placement, elements, np_dtype, shapes=()):
    """The record `record_bucket_all_reduce` logs (a training loop logs the same bucket at every step: a bucket
    makes it once and logs it with `log`)."""
    meta = TensorMeta((int(elements),), dtypes.any_from_numpy(np_dtype))
    held = ["x".join(map(str, s)) or "scalar" for s in shapes]
    label = "gradient bucket" if not held else "gradient bucket [%s]" % ", ".join(
        held if len(held) <= 4 else held[:3] + ["... %d more" % (len(held) - 3)])
    return BoxingRecord(label, meta.shape, meta.dtype.name, placement, S.P, placement, S.B,
                        transitions.collective_name(placement, S.P, placement, S.B),
                        float(transitions.cost(placement, S.P, placement, S.B, meta)))


def log(rec):
    records = context.get().boxing_log
    records[rec] = records.get(rec, 0) + 1
