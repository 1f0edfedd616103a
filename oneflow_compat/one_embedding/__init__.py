"""`oneflow.one_embedding` (OneFlow 0.9): large embedding tables keyed by feature id (options.py, embedding.py,
persistent_table.py; the lookup and update ops: ops/one_embedding_ops.py, kernels/one_embedding.py)."""
from oneflow_compat.one_embedding.embedding import (  # noqa: F401
    Embedding, MultiTableEmbedding, MultiTableMultiColumnEmbedding, Optimizer, make_persistent_table_reader,
    make_persistent_table_writer)
from oneflow_compat.one_embedding.options import (  # noqa: F401
    make_cached_host_mem_store_options, make_cached_ssd_store_options, make_column_options,
    make_constant_initializer, make_device_mem_store_options, make_normal_initializer, make_table,
    make_table_options, make_uniform_initializer)
from oneflow_compat.one_embedding.ftrl import Ftrl  # noqa: F401
