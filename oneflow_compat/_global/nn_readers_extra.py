"""OneFlow 0.9's `nn.RawReader` and `nn.GPTIndexedBinDataReader` (python/oneflow/nn/modules/dataset.py v0.9.0;
api-misc2): source modules, local on the cpu or global on `placement` with `sbp` (split(0): each rank reads its
share of the batch; broadcast: the whole batch), as the other readers of `_global/nn_data.py`, whose layout and
seed rules they share (a module without `random_seed` takes one derived from the default generator's seed and the
module's creation order, the same on every rank; OneFlow drew one at random).

* RawReader(files, shape, dtype, batch_size, random_shuffle=True, shuffle_block_size=0, random_seed=None,
  placement=None, sbp=None): fixed-size instances from raw files, the `raw_reader` op (ops/raw_reader_ops.py,
  format and order in datasets/raw_io.py).
* GPTIndexedBinDataReader(data_file_prefix, seq_length, num_samples, batch_size, dtype=flow.int64, shuffle=True,
  random_seed=None, split_sizes=None, split_index=None, device=None, placement=None, sbp=None): (batch_size,
  seq_length + 1) token ids of a Megatron-LM indexed dataset (`<prefix>.idx` / `.bin`), the legacy API's
  `megatron_gpt_mmap_data_loader` op (ops/legacy_data_ops.py, datasets/megatron_io.py), label_length 1 as
  OneFlow's module passes it.
"""
from oneflow_compat import sbp as flow_sbp
from oneflow_compat.ir import dtypes
from oneflow_compat.ops import legacy_data_ops, raw_reader_ops  # noqa: F401 (the ops)
from oneflow_compat._global.modules import Module
from oneflow_compat._global.nn_data import _layout, _seed, _source, _stream


def _numeric_dtype(dtype, what):
    dt = dtypes.as_dtype(dtype)
    if dt is None or dt.np is None or dt in (dtypes.tensor_buffer, dtypes.record):
        raise TypeError("%s: dtype must be a numeric oneflow dtype, got %r" % (what, dtype))
    return dt


class RawReader(Module):
    def __init__(self, files, shape, dtype, batch_size, random_shuffle=True, shuffle_block_size=0, random_seed=None,
                 placement=None, sbp=None):
        super().__init__()
        if isinstance(files, str) or not files:
            raise ValueError("RawReader: files must be a non-empty list of file paths, got %r" % (files,))
        _layout(self, None, placement, sbp, "RawReader")
        self.files = [str(f) for f in files]
        self.shape = tuple(int(d) for d in shape)
        self.dtype = _numeric_dtype(dtype, "RawReader")
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError("RawReader: batch size must be greater than 0, got %r" % (batch_size,))
        self.shuffle = bool(random_shuffle)
        self.shuffle_block_size = int(shuffle_block_size)
        self._stream = _stream("RawReader")
        self.random_seed = _seed(random_seed, self._stream, placement is not None)

    def forward(self):
        return _source(self, "raw_reader", {
            "files": tuple(self.files), "shape": self.shape, "data_type": self.dtype, "batch_size": self.batch_size,
            "random_shuffle": self.shuffle, "shuffle_block_size": self.shuffle_block_size,
            "seed": self.random_seed, "module": self._stream})[0]


class GPTIndexedBinDataReader(Module):
    def __init__(self, data_file_prefix, seq_length, num_samples, batch_size, dtype=dtypes.int64, shuffle=True,
                 random_seed=None, split_sizes=None, split_index=None, device=None, placement=None, sbp=None):
        super().__init__()
        _layout(self, device, placement, sbp, "GPTIndexedBinDataReader")
        self.data_file_prefix = str(data_file_prefix)
        self.batch_size, self.num_samples, self.seq_length = int(batch_size), int(num_samples), int(seq_length)
        self.dtype = _numeric_dtype(dtype, "GPTIndexedBinDataReader")
        self.shuffle = bool(shuffle)
        self.split_index = 0 if split_index is None else int(split_index)
        self.split_sizes = (1,) if split_sizes is None else tuple(int(s) for s in split_sizes)
        if self.split_index >= len(self.split_sizes):
            raise ValueError("split index {} is out of range, split_sizes {}".format(self.split_index,
                                                                                    self.split_sizes))
        self._stream = _stream("GPTIndexedBinDataReader")
        self.random_seed = _seed(random_seed, self._stream, placement is not None)

    def forward(self):
        dists = () if self.sbp is None else tuple("B" if s == flow_sbp.broadcast else "S(0)" for s in self.sbp)
        return _source(self, "megatron_gpt_mmap_data_loader", {
            "data_file_prefix": self.data_file_prefix, "seq_length": self.seq_length, "label_length": 1,
            "num_samples": self.num_samples, "batch_size": self.batch_size, "dtype": self.dtype,
            "shuffle": self.shuffle, "seed": self.random_seed, "split_sizes": self.split_sizes,
            "split_index": self.split_index, "parallel_distribution": dists, "module": self._stream})[0]
