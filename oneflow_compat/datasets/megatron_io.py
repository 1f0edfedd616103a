"""Megatron-LM's indexed GPT datasets (`<prefix>.idx` + `<prefix>.bin`, the "MMIDIDX" memory-mapped format) read as
OneFlow v0.4.0's `megatron_gpt_mmap_data_loader` reads them (`oneflow/user/data/gpt_dataset.{h,cpp}`):

* the index: magic "MMIDIDX\\0\\0", version (uint64), dtype code (1 byte: 1 uint8, 2 int8, 3 int16, 4 int32,
  5 int64, 6 float32, 7 float64, 8 uint16), the number of documents n and of document offsets n + 1 (uint64 each),
  then the document sizes (int32 × n), their byte addresses in the .bin file (int64 × n) and the offsets
  (int64 × (n + 1)); nothing may follow;
* `split_sizes` / `split_index` select a contiguous range of documents (each split's share rounded to nearest);
* enough epochs of those documents to give `num_samples` samples of seq_length + 1 tokens (consecutive samples
  share one token); the last epoch is shuffled separately when it holds fewer than 80% of an epoch's samples;
* with `shuffle`, the documents of the (complete) epochs and then the samples are permuted from `seed` (numpy's
  permutation where OneFlow used std::shuffle over mt19937, so the order differs from OneFlow's for one seed).

Pure functions over files; the lazy op (`flow.data.megatron_gpt_mmap_data_loader`) is built elsewhere.
"""
import math
import struct

import numpy as np

__all__ = ["MegatronGPTIndex", "MegatronGPTMMapDataset", "write_dataset"]

MAGIC = b"MMIDIDX\x00\x00"
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float32, 7: np.float64,
          8: np.uint16}


class MegatronGPTIndex:
    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        if data[:len(MAGIC)] != MAGIC:
            raise ValueError("%s: not a Megatron indexed dataset index (magic code %r)" % (path, data[:len(MAGIC)]))
        pos = len(MAGIC)
        self.version, = struct.unpack_from("<Q", data, pos)
        self.dtype_code = data[pos + 8]
        n, n_offsets = struct.unpack_from("<QQ", data, pos + 9)
        pos += 25
        if n + 1 != n_offsets:
            raise ValueError("%s: %d documents but %d document offsets (Check failed: sizes_size + 1 == "
                             "doc_offsets_size)" % (path, n, n_offsets))
        if self.dtype_code not in DTYPES:
            raise ValueError("%s: unknown token dtype code %d" % (path, self.dtype_code))
        self.sizes = np.frombuffer(data, np.int32, n, pos).astype(np.int64)
        pos += 4 * n
        self.addresses = np.frombuffer(data, np.int64, n, pos)
        pos += 8 * n
        self.doc_offsets = np.frombuffer(data, np.int64, n + 1, pos)
        pos += 8 * (n + 1)
        if pos != len(data):
            raise ValueError("%s: %d bytes after the index's end" % (path, len(data) - pos))


def _split_docs(split_sizes, split_index, num_docs):
    if split_index >= len(split_sizes):
        raise ValueError("split index %d is out of range, split_sizes %s" % (split_index, list(split_sizes)))
    total = float(sum(split_sizes))
    offset = sum(int(np.rint(np.float32(s / total) * num_docs)) for s in split_sizes[:split_index])
    size = int(np.rint(np.float32(split_sizes[split_index] / total) * num_docs))
    return np.arange(offset, offset + size)


class MegatronGPTMMapDataset:
    """Samples of seq_len + label_len tokens; `sample(index)` is the index-th of the (shuffled) sequence."""

    def __init__(self, prefix, seq_len, label_len, num_samples, split_sizes=(1,), split_index=0, shuffle=True,
                 seed=0):
        self.index = MegatronGPTIndex(prefix + ".idx")
        self.data = np.memmap(prefix + ".bin", dtype=np.uint8, mode="r")
        self.token_dtype = np.dtype(DTYPES[self.index.dtype_code])
        self.seq_len, self.sample_len, self.num_samples = seq_len, seq_len + label_len, num_samples
        rng = np.random.default_rng(seed % (1 << 63))
        epoch_docs = _split_docs(list(split_sizes), split_index, len(self.index.sizes))
        tokens_per_epoch = int(self.index.sizes[epoch_docs].sum())
        if tokens_per_epoch == 0:
            raise ValueError("%s: the selected split has no tokens" % prefix)
        num_epochs = int(math.ceil((num_samples * seq_len + 1) / float(tokens_per_epoch)))
        complete = num_epochs
        if num_epochs > 1:
            per_epoch = (tokens_per_epoch - 1) // seq_len
            before_last = ((num_epochs - 1) * tokens_per_epoch - 1) // seq_len
            last = num_samples - before_last
            if last < int(0.8 * per_epoch):
                complete = num_epochs - 1
        docs = np.tile(epoch_docs, complete)
        if shuffle:
            docs = rng.permutation(docs)
        if complete != num_epochs:
            docs = np.concatenate([docs, rng.permutation(epoch_docs) if shuffle else epoch_docs])
        self.docs = docs
        total = (num_epochs * tokens_per_epoch - 1) // seq_len
        starts, di, off = [], 0, 0
        sizes = self.index.sizes
        for _ in range(total):
            if di >= len(docs):
                break
            starts.append((di, off))
            remaining = seq_len
            while remaining > 0:
                length = int(sizes[docs[di]]) - off
                if remaining < length:
                    off += remaining
                else:
                    di, off = di + 1, 0
                remaining -= length
        if len(starts) < num_samples:
            raise ValueError("%s: %d samples available, %d asked" % (prefix, len(starts), num_samples))
        self.starts = starts
        order = np.arange(len(starts))
        if shuffle:
            head = (complete * tokens_per_epoch - 1) // seq_len
            order[:head] = rng.permutation(order[:head])
            if complete != num_epochs:
                order[head:] = rng.permutation(order[head:])
        self.order = order

    def __len__(self):
        return len(self.order)

    def sample(self, index, np_dtype=np.int64):
        if index >= len(self.order):
            raise IndexError("sample %d of a dataset of %d samples (its num_samples epochs ran out)"
                             % (index, len(self.order)))
        di, off = self.starts[self.order[index]]
        out, remaining, size = [], self.sample_len, self.token_dtype.itemsize
        while remaining > 0:
            doc = self.docs[di]
            length = int(self.index.sizes[doc]) - off
            take = min(length, remaining)
            if length <= remaining:
                di, off2 = di + 1, 0
            else:
                off2 = off + take
            start = int(self.index.addresses[doc]) + off * size
            out.append(np.frombuffer(self.data[start:start + take * size].tobytes(), self.token_dtype))
            remaining -= take
            off = off2
        return np.concatenate(out).astype(np_dtype)


def write_dataset(prefix, documents, dtype=np.uint16):
    """Writes documents (sequences of token ids) as `<prefix>.bin` / `<prefix>.idx` (Megatron's format)."""
    dtype = np.dtype(dtype)
    code = {np.dtype(v): k for k, v in DTYPES.items()}[dtype]
    sizes, addresses, address = [], [], 0
    with open(prefix + ".bin", "wb") as f:
        for doc in documents:
            arr = np.asarray(doc, dtype)
            f.write(arr.tobytes())
            sizes.append(len(arr))
            addresses.append(address)
            address += arr.nbytes
    n = len(sizes)
    with open(prefix + ".idx", "wb") as f:
        f.write(MAGIC + struct.pack("<Q", 1) + bytes([code]) + struct.pack("<QQ", n, n + 1))
        f.write(np.asarray(sizes, np.int32).tobytes())
        f.write(np.asarray(addresses, np.int64).tobytes())
        f.write(np.arange(n + 1, dtype=np.int64).tobytes())
