"""`flow.one_embedding`'s option builders (OneFlow 0.9, python/oneflow/one_embedding.py at v0.9.0): the table and
initializer dicts and the three store configurations, with OneFlow's checks (its bare asserts are
AssertionErrors here too, with a message naming the parameter) and OneFlow's dict layout, which `MultiTableEmbedding`
reads.

The store kinds differ in OneFlow by where the lines live (GPU memory, host memory with a GPU cache, SSD with a GPU
/ host cache); here every kind keeps the table in host memory and writes the persistent table (OneFlow's file
format, `persistent_table.py`) at `save_snapshot`: the numbers are the same, the caches are recorded, not used.
"""


def _check(cond, message):
    if not cond:
        raise AssertionError(message)


def _check_path(persistent_path):
    _check(isinstance(persistent_path, (str, list, tuple)),
           "persistent_path must be a str or a list of str (one per rank), got %s" % type(persistent_path).__name__)


def make_device_mem_store_options(persistent_path, capacity, size_factor=1, storage_dim=-1,
                                  physical_block_size=4096):
    """GPU-only store options of MultiTableEmbedding (a full cache of `capacity` lines over the persistent table)."""
    _check_path(persistent_path)
    _check(capacity > 0, "capacity must be > 0, got %r" % (capacity,))
    return {
        "kv_store": {
            "caches": [{"policy": "full", "capacity": int(capacity), "value_memory_kind": "device"}],
            "persistent_table": {"path": persistent_path, "physical_block_size": physical_block_size,
                                 "capacity_hint": int(capacity)},
        },
        "size_factor": size_factor,
        "storage_dim": storage_dim,
    }


def make_cached_ssd_store_options(cache_budget_mb, persistent_path, capacity=None, size_factor=1, storage_dim=-1,
                                  physical_block_size=4096, host_cache_budget_mb=0):
    """SSD store options with a GPU (`cache_budget_mb`) and/or host (`host_cache_budget_mb`) LRU cache."""
    _check_path(persistent_path)
    _check(cache_budget_mb > 0 or host_cache_budget_mb > 0,
           "cache_budget_mb or host_cache_budget_mb must be > 0, got %r and %r" % (cache_budget_mb,
                                                                                   host_cache_budget_mb))
    if capacity is not None:
        _check(capacity > 0, "capacity must be > 0, got %r" % (capacity,))
    else:
        capacity = 0
    caches = []
    if cache_budget_mb > 0:
        caches.append({"policy": "lru", "cache_memory_budget_mb": cache_budget_mb, "value_memory_kind": "device"})
    if host_cache_budget_mb > 0:
        caches.append({"policy": "lru", "cache_memory_budget_mb": host_cache_budget_mb,
                       "value_memory_kind": "host"})
    return {
        "kv_store": {
            "caches": caches,
            "persistent_table": {"path": persistent_path, "physical_block_size": physical_block_size,
                                 "capacity_hint": int(capacity)},
        },
        "size_factor": size_factor,
        "storage_dim": storage_dim,
    }


def make_cached_host_mem_store_options(cache_budget_mb, persistent_path, capacity, size_factor=1, storage_dim=-1,
                                       physical_block_size=4096):
    """Host-memory store options (a full host cache of `capacity` lines) with a GPU LRU cache."""
    _check_path(persistent_path)
    _check(cache_budget_mb > 0, "cache_budget_mb must be > 0, got %r" % (cache_budget_mb,))
    _check(capacity > 0, "capacity must be > 0, got %r" % (capacity,))
    return {
        "kv_store": {
            "caches": [
                {"policy": "lru", "cache_memory_budget_mb": cache_budget_mb, "value_memory_kind": "device"},
                {"policy": "full", "capacity": int(capacity), "value_memory_kind": "host"},
            ],
            "persistent_table": {"path": persistent_path, "physical_block_size": physical_block_size,
                                 "capacity_hint": int(capacity)},
        },
        "size_factor": size_factor,
        "storage_dim": storage_dim,
    }


def make_uniform_initializer(low, high):
    """Initializer drawing each element from U(low, high)."""
    return {"type": "uniform", "low": low, "high": high}


def make_normal_initializer(mean, std):
    """Initializer drawing each element from N(mean, std²)."""
    return {"type": "normal", "mean": mean, "std": std}


def make_constant_initializer(value):
    """Initializer setting each element to `value`."""
    return {"type": "constant", "value": value}


def make_table_options(param):
    """A table of an embedding: `param` is an initializer, or a list of column options (make_column_options)."""
    if isinstance(param, dict):
        return {"initializer": param}
    if isinstance(param, (list, tuple)):
        return {"columns": param}
    raise ValueError("param must be initializer or columns")


def make_column_options(initializer):
    return {"initializer": initializer}


def make_table(param):
    """Alias of `make_table_options`."""
    return make_table_options(param)


def check_initializer(initializer):
    _check(isinstance(initializer, dict), "initializer must be a dict, got %s" % type(initializer).__name__)
    _check("type" in initializer, "initializer has no 'type'")
    kind = initializer["type"]
    _check(kind in ("uniform", "normal", "constant"),
           "initializer type must be uniform, normal or constant, got %r" % (kind,))
    needed = {"uniform": ("low", "high"), "normal": ("mean", "std"), "constant": ("value",)}[kind]
    for key in needed:
        _check(key in initializer, "%s initializer has no %r" % (kind, key))


def check_cache(cache):
    _check(isinstance(cache, dict), "cache options must be a dict")
    _check(cache.get("policy") in ("lru", "full"), "cache policy must be lru or full, got %r" % (cache.get("policy"),))
    _check(cache.get("cache_memory_budget_mb", 0) > 0 or cache.get("capacity", 0) > 0,
           "cache needs cache_memory_budget_mb > 0 or capacity > 0")
    _check(cache.get("value_memory_kind") in ("device", "host"),
           "cache value_memory_kind must be device or host, got %r" % (cache.get("value_memory_kind"),))
