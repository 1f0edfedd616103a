"""OneFlow 0.9's persistent table on disk (oneflow/core/embedding/persistent_table.cpp at v0.9.0), read and
written in its layout, so tables and snapshots move between OneFlow and this implementation:

    PATH/LOCK                                  created by the first writer
    PATH/KEY_SIZE, VALUE_SIZE, PHYSICAL_BLOCK_SIZE, NUM_LOGICAL_BLOCKS_PER_CHUNK   decimal text and a newline
    PATH/keys/key-000000000000                 the keys of chunk 0, one slot per value (zero padding)
    PATH/values/value-000000000000             chunk 0's logical blocks of values
    PATH/snapshots/NAME/LIST                   one line per chunk with entries: index-000000000000
    PATH/snapshots/NAME/index-000000000000     uint64 row indices (chunk * values per chunk + slot) of the keys

A logical block is the physical block size, or the value size rounded up to it; it holds
logical_block // value_size values; a chunk holds target_chunk_size (4 GiB) // logical_block blocks. Writes append
whole blocks after the last one (OneFlow's PutBlocks: the table is a log; a snapshot names the rows it holds).
Key and value bytes are native little-endian.

A snapshot is written whole into a temporary folder beside its final name, its files synced, then renamed into
place: an interrupted save leaves the previous snapshot of that name (or none) and never a partial one.
"""
import os
import shutil
import uuid

import numpy as np

TARGET_CHUNK_SIZE_MB = 4 * 1024
CHUNK_SUFFIX = 12
READ_BATCH = 65536


def rank_paths(persistent_path, parallel_num):
    """Each rank's table folder: a list as given (one per rank), or ROOT/<rank zero-padded>-<parallel_num>
    (key_value_store_options.h)."""
    if isinstance(persistent_path, (list, tuple)):
        if len(persistent_path) != parallel_num:
            raise AssertionError("persistent_path lists %d paths for %d ranks" % (len(persistent_path), parallel_num))
        return [str(p) for p in persistent_path]
    width = len(str(parallel_num))
    return [os.path.join(persistent_path, "%s-%d" % (str(r).zfill(width), parallel_num)) for r in range(parallel_num)]


def chunk_name(chunk_id):
    return str(chunk_id).zfill(CHUNK_SUFFIX)


def _logical_block_size(physical_block_size, value_size):
    if physical_block_size >= value_size:
        return physical_block_size
    return -(-value_size // physical_block_size) * physical_block_size


def _fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class PersistentTable:
    """One rank's table folder. `value_size` in bytes; keys of `key_dtype` (4 or 8 bytes)."""

    def __init__(self, path, key_dtype, value_size, physical_block_size=4096, read_only=False,
                 target_chunk_size_mb=TARGET_CHUNK_SIZE_MB):
        self.path = path
        self.key_dtype = np.dtype(key_dtype)
        self.value_size = int(value_size)
        self.physical_block_size = int(physical_block_size)
        self.logical_block_size = _logical_block_size(self.physical_block_size, self.value_size)
        self.blocks_per_chunk = target_chunk_size_mb * 1024 * 1024 // self.logical_block_size
        self.values_per_block = self.logical_block_size // self.value_size
        self.values_per_chunk = self.values_per_block * self.blocks_per_chunk
        lock = os.path.join(path, "LOCK")
        init = not os.path.exists(lock)
        if read_only and init:
            raise RuntimeError("The table must be initialized in read only mode: %s has no persistent table" % path)
        meta = {"KEY_SIZE": self.key_dtype.itemsize, "VALUE_SIZE": self.value_size,
                "PHYSICAL_BLOCK_SIZE": self.physical_block_size,
                "NUM_LOGICAL_BLOCKS_PER_CHUNK": self.blocks_per_chunk}
        if init:
            os.makedirs(os.path.join(path, "keys"), exist_ok=True)
            os.makedirs(os.path.join(path, "values"), exist_ok=True)
            for name, value in meta.items():
                with open(os.path.join(path, name), "w") as f:
                    f.write("%d\n" % value)
            open(lock, "a").close()
        else:
            for name, value in meta.items():
                fname = os.path.join(path, name)
                try:
                    with open(fname) as f:
                        got = int(f.read().split()[0])
                except (OSError, ValueError, IndexError):
                    raise RuntimeError("Check failed: %s (missing or unreadable)" % fname) from None
                if got != value:
                    raise RuntimeError("Check failed: %s (the table has %d, this reader or writer %d)"
                                       % (fname, got, value))

    def key_file(self, chunk_id):
        return os.path.join(self.path, "keys", "key-" + chunk_name(chunk_id))

    def value_file(self, chunk_id):
        return os.path.join(self.path, "values", "value-" + chunk_name(chunk_id))

    def _physical_size(self):
        """Values slots in use: whole chunks, then the last chunk's blocks (a partial block counts as used)."""
        chunks = sorted(int(f[len("value-"):]) for f in os.listdir(os.path.join(self.path, "values"))
                        if f.startswith("value-") and len(f) == len("value-") + CHUNK_SUFFIX)
        if not chunks:
            return 0
        last = os.path.getsize(self.value_file(chunks[-1]))
        blocks = -(-last // self.logical_block_size)
        return (chunks[-1] * self.blocks_per_chunk + blocks) * self.values_per_block

    def put(self, keys, values):
        """Appends `keys` (n,) and their `values` (n, value_size bytes as uint8) in whole blocks; returns the row
        index of each."""
        keys = np.ascontiguousarray(keys, self.key_dtype)
        values = np.ascontiguousarray(values).view(np.uint8).reshape(len(keys), self.value_size)
        n = len(keys)
        start = self._physical_size()
        written = 0
        while written < n:
            index = start + written
            chunk, slot = divmod(index, self.values_per_chunk)
            take = min(n - written, self.values_per_chunk - slot)
            nblocks = -(-take // self.values_per_block)
            block_bytes = np.zeros((nblocks, self.logical_block_size), np.uint8)
            slots = np.zeros((nblocks * self.values_per_block, self.value_size), np.uint8)
            slots[:take] = values[written:written + take]
            block_bytes[:, :self.values_per_block * self.value_size] = slots.reshape(nblocks, -1)
            key_slots = np.zeros(nblocks * self.values_per_block, self.key_dtype)
            key_slots[:take] = keys[written:written + take]
            block = slot // self.values_per_block
            for fname, data, offset in ((self.value_file(chunk), block_bytes, block * self.logical_block_size),
                                        (self.key_file(chunk), key_slots,
                                         block * self.values_per_block * self.key_dtype.itemsize)):
                fd = os.open(fname, os.O_CREAT | os.O_RDWR, 0o644)
                try:
                    os.pwrite(fd, data.tobytes(), offset)
                    os.fsync(fd)
                finally:
                    os.close(fd)
            written += take
        return np.arange(start, start + n, dtype=np.uint64)

    # --- snapshots ---------------------------------------------------------------------------------------------
    def snapshot_dir(self, name):
        return os.path.join(self.path, "snapshots", name)

    def snapshot_exists(self, name):
        return os.path.exists(os.path.join(self.snapshot_dir(name), "LIST"))

    def save_snapshot(self, name, indices):
        """Writes snapshot `name` naming rows `indices` (uint64), atomically (see the module docstring)."""
        if not name or "/" in name or name.startswith("."):
            raise ValueError("snapshot name %r: must be a plain file name" % (name,))
        base = os.path.join(self.path, "snapshots")
        os.makedirs(base, exist_ok=True)
        tmp = os.path.join(base, ".tmp-%s-%s" % (name, uuid.uuid4().hex))
        os.makedirs(tmp)
        try:
            indices = np.asarray(indices, np.uint64)
            chunks = indices // np.uint64(self.values_per_chunk)
            lines = []
            for c in np.unique(chunks).tolist():
                fname = "index-" + chunk_name(c)
                with open(os.path.join(tmp, fname), "wb") as f:
                    f.write(indices[chunks == c].astype("<u8").tobytes())
                    f.flush()
                    os.fsync(f.fileno())
                lines.append(fname + "\n")
            with open(os.path.join(tmp, "LIST"), "w") as f:
                f.write("".join(lines))
                f.flush()
                os.fsync(f.fileno())
            final = self.snapshot_dir(name)
            old = None
            if os.path.exists(final):
                old = os.path.join(base, ".old-%s-%s" % (name, uuid.uuid4().hex))
                os.rename(final, old)
            os.rename(tmp, final)
            _fsync_path(base)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def read_snapshot(self, name):
        """Yields (keys, values as uint8 rows) of snapshot `name`, in batches of at most 65536 keys."""
        listing = os.path.join(self.snapshot_dir(name), "LIST")
        if not os.path.exists(listing):
            raise FileNotFoundError("persistent table %s has no snapshot named %r (no %s)" % (self.path, name,
                                                                                            listing))
        with open(listing) as f:
            names = [line.strip() for line in f if line.strip()]
        for fname in names:
            chunk = int(fname[len("index-"):])
            indices = np.fromfile(os.path.join(self.snapshot_dir(name), fname), dtype="<u8")
            if indices.size == 0:
                continue
            slots = (indices - np.uint64(chunk * self.values_per_chunk)).astype(np.int64)
            keys = np.fromfile(self.key_file(chunk), dtype=self.key_dtype)
            raw = np.fromfile(self.value_file(chunk), dtype=np.uint8)
            blocks = slots // self.values_per_block
            offsets = blocks * self.logical_block_size + (slots % self.values_per_block) * self.value_size
            for s in range(0, len(slots), READ_BATCH):
                off = offsets[s:s + READ_BATCH]
                vals = raw[off[:, None] + np.arange(self.value_size)[None, :]]
                yield keys[slots[s:s + READ_BATCH]].copy(), vals
