"""OneFlow 0.9's `flow.nn.utils.rnn`: `PackedSequence`, `pack_padded_sequence`, `pad_packed_sequence`,
`pad_sequence`, `pack_sequence`, `unpad_sequence`, `unpack_sequence` (and `flow._C.pack_padded_sequence`).

Packing and padding are composed of slices, concatenations and stacks, so gradients flow through them (a loss on
an RNN's packed output reaches the padded input). `batch_sizes` is a host (CPU) int64 tensor, as OneFlow keeps it;
the lengths are read on the host.

Facts from OneFlow v0.9.0: python/oneflow/nn/utils/rnn.py (signatures, `pad_packed_sequence` returning the lengths
as a float32 tensor, as its docstring shows, the checks' messages) and oneflow/core/functional/impl/rnn_functor.cpp
(PackPaddedSequenceFunctor: its checks and messages). OneFlow 0.9's Python asserts `enforce_sorted == True`
although its docstring documents `enforce_sorted=False`; here False sorts the batch by length (the documented
behaviour, the code path after OneFlow's assert): the RNN modules then permute their states with
`sorted_indices` / `unsorted_indices`.
"""
import numpy as np

from oneflow_compat import sbp as flow_sbp
from oneflow_compat.ir import dtypes
from oneflow_compat._global import creation
from oneflow_compat._global import functional as F
from oneflow_compat._global import tensor_functions as TF
from oneflow_compat._global.tensor import Tensor


def _bind(optional, fn):
    return None if optional is None else fn(optional)


def invert_permutation(permutation):
    """The inverse permutation (int64): inv[permutation[i]] = i."""
    if permutation is None:
        return None
    return TF.argsort(permutation)


class PackedSequence(object):
    """Holds the data and the list of `batch_sizes` of a packed sequence (made by `pack_padded_sequence` /
    `pack_sequence`, not by hand): `data` stacks, time step by time step, the rows of the sequences still running
    at that step; `batch_sizes[t]` is how many."""

    def __init__(self, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        self.sorted_indices = sorted_indices
        self.unsorted_indices = invert_permutation(sorted_indices) if unsorted_indices is None \
            else unsorted_indices
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                                 "created manually. They should be instantiated by functions like pack_sequence "
                                 "and pack_padded_sequences in nn.rnn_utils ")
            self.data, self.batch_sizes = data, batch_sizes
        else:
            assert isinstance(data, (list, tuple)) and len(data) == 2
            self.data, self.batch_sizes = data[0], data[1]

    def __iter__(self):  # unpacks as (data, batch_sizes, sorted_indices, unsorted_indices), a namedtuple's fields
        return iter((self.data, self.batch_sizes, self.sorted_indices, self.unsorted_indices))

    def __repr__(self):
        return "PackedSequence(data=%r, batch_sizes=%r, sorted_indices=%r, unsorted_indices=%r)" % tuple(self)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "dtype")}
        sorted_indices = _bind(self.sorted_indices, lambda t: t.to(data.device, **kwargs))
        unsorted_indices = _bind(self.unsorted_indices, lambda t: t.to(data.device, **kwargs))
        return PackedSequence(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cuda(self, *args, **kwargs):
        return self.to(*args, device="cuda", **kwargs)

    def cpu(self, *args, **kwargs):
        return self.to(*args, device="cpu", **kwargs)

    def pin_memory(self):
        return self

    def double(self):
        return self.to(dtype=dtypes.float64)

    def float(self):
        return self.to(dtype=dtypes.float32)

    def half(self):
        return self.to(dtype=dtypes.float16)

    def long(self):
        return self.to(dtype=dtypes.int64)

    def int(self):
        return self.to(dtype=dtypes.int32)

    def char(self):
        return self.to(dtype=dtypes.int8)

    def byte(self):
        return self.to(dtype=dtypes.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _host_ints(values, what):
    if isinstance(values, Tensor):
        values = values.numpy()
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise RuntimeError("%s: lengths must be a 1-D tensor or list, got %d dimensions" % (what, arr.ndim))
    return [int(v) for v in arr.reshape(-1)]


def _full(shape, value, like):
    """A constant block of `like`'s dtype and device (or placement, broadcast) to pad with."""
    if like.is_global:
        return creation.full(tuple(shape), value, dtype=like.dtype, placement=like.placement,
                             sbp=[flow_sbp.broadcast] * len(like.sbp))
    return creation.full(tuple(shape), value, dtype=like.dtype, device=like.device)


def _pack(input, lengths, batch_first):  # noqa: A002
    """`flow._C.pack_padded_sequence(input, lengths, batch_first)`: (data, batch_sizes), lengths decreasing."""
    x = F.transpose(input, 0, 1) if batch_first else input
    if x.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    batch = x.shape[1]
    lengths = _host_ints(lengths, "pack_padded_sequence")
    if len(lengths) != batch:
        raise RuntimeError("Expected `len(lengths)` to be equal to batch_size, but got %d (batch_size=%d)"
                           % (len(lengths), batch))
    if lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if any(b > a for a, b in zip(lengths, lengths[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                           "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    if lengths[0] > x.shape[0]:
        raise RuntimeError("pack_padded_sequence: the longest length %d exceeds the %d time steps of the input"
                           % (lengths[0], x.shape[0]))
    sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0])]
    rows = [F.index(x, t) if b == batch else TF.narrow(F.index(x, t), 0, 0, b) for t, b in enumerate(sizes)]
    data = F.cat(rows, 0)
    batch_sizes = creation.local_tensor(np.asarray(sizes, dtype=np.int64), dtype=dtypes.int64)
    batch_sizes._host_sizes = tuple(sizes)  # (read by the RNNs and pad_packed_sequence, in nn.Graph.build too)
    return data, batch_sizes


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """Packs a padded batch (T, B, *) (or (B, T, *) with `batch_first`) of sequences of `lengths`."""
    lengths_list = _host_ints(lengths, "pack_padded_sequence")
    sorted_indices = None
    if not enforce_sorted:
        order = np.argsort(-np.asarray(lengths_list, dtype=np.int64), kind="stable")
        lengths_list = [lengths_list[i] for i in order]
        sorted_indices = creation.tensor(order.astype(np.int64), dtype=dtypes.int64) if not input.is_global else \
            creation.tensor(order.astype(np.int64), dtype=dtypes.int64, placement=input.placement,
                            sbp=[flow_sbp.broadcast] * len(input.sbp))
        input = TF.index_select(input, 0 if batch_first else 1, sorted_indices)  # noqa: A001
    data, batch_sizes = _pack(input, lengths_list, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of `pack_padded_sequence`: (padded (T, B, *) or (B, T, *), lengths as a float32 tensor)."""
    max_seq_length = sequence.batch_sizes.shape[0]
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             "but got total_length={} and max sequence length being {}"
                             .format(total_length, max_seq_length))
    else:
        total_length = max_seq_length
    bs = sequence.batch_sizes
    if len(bs.shape) != 1 or bs.device.type != "cpu" or bs.dtype != dtypes.int64:
        raise AssertionError("'sequence.batch_sizes' should be a 1D CPU int64 tensor, but got %d D %s %s tensor"
                             % (len(bs.shape), bs.device.type, bs.dtype))
    sizes = list(getattr(bs, "_host_sizes", None) or [int(b) for b in bs.numpy()])
    data = sequence.data
    batch = sizes[0]
    trailing = tuple(data.shape[1:])
    steps, offset = [], 0
    for b in sizes:
        rows = TF.narrow(data, 0, offset, b)
        offset += b
        if b < batch:
            rows = F.cat([rows, _full((batch - b,) + trailing, padding_value, data)], 0)
        steps.append(rows)
    for _ in range(total_length - len(sizes)):
        steps.append(_full((batch,) + trailing, padding_value, data))
    padded = F.stack(steps, 1 if batch_first else 0)
    lengths = np.array([sum(1 for b in sizes if b > i) for i in range(batch)], dtype=np.float32)
    lengths = creation.tensor(lengths, dtype=dtypes.float32)
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        padded = TF.index_select(padded, 0 if batch_first else 1, unsorted)
        lengths = TF.index_select(lengths, 0, unsorted.to_local() if unsorted.is_global else unsorted)
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0):
    """Stacks sequences (L_i, *) into (max L, B, *) (or (B, max L, *)), padded with `padding_value`."""
    if isinstance(sequences, Tensor):
        sequences = TF.unbind(sequences, 0)
    sequences = list(sequences)
    if not sequences:
        raise ValueError("pad_sequence: expected a non-empty list of tensors")
    trailing = tuple(sequences[0].shape[1:])
    for i, s in enumerate(sequences):
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError("pad_sequence: sequence %d has trailing dimensions %s, sequence 0 has %s"
                               % (i, tuple(s.shape[1:]), trailing))
    max_len = max(s.shape[0] for s in sequences)
    padded = [s if s.shape[0] == max_len else
              F.cat([s, _full((max_len - s.shape[0],) + trailing, padding_value, s)], 0) for s in sequences]
    return F.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences of a padded batch, each cut to its length."""
    x = padded_sequences if batch_first else F.transpose(padded_sequences, 0, 1)
    return [TF.narrow(F.index(x, i), 0, 0, int(n)) for i, n in enumerate(_host_ints(lengths, "unpad_sequence"))]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of sequences (L_i, *) (decreasing lengths unless `enforce_sorted=False`)."""
    lengths = [int(v.size(0)) for v in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences of a PackedSequence."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
