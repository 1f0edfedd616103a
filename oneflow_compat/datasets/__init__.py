"""Dataset helpers behind `flow.data`: MNIST loading and OFRecord part-file I/O (pure functions, no graph ops)."""
from oneflow_compat.datasets.mnist import load_mnist
from oneflow_compat.datasets.ofrecord_io import (RecordReader, decode_bytes, decode_image, decode_raw,
                                                 iter_records, iter_serialized, part_name, part_paths, write_part)

__all__ = ["load_mnist", "RecordReader", "decode_bytes", "decode_image", "decode_raw", "iter_records",
           "iter_serialized", "part_name", "part_paths", "write_part"]
