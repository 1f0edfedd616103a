"""`validate --device gpu` over EVERY op with example rows, on the strict fake device (tests/strict_device.py:
CuPy's host/device rules on numpy): each op's kernels run on the device against the numpy reference, on one
device and on every signature over 2 devices, and no kernel reads a device value back to the host (an implicit
`int()`/`float()`/`bool()`/`.item()`/boolean-mask read fails the op; an explicit `.get()` inside a kernel is counted
and must be zero). The ops that must read the host by nature are listed below with the reason, and the test shows
that each of them still does (a stale entry fails), so the list cannot grow silently.

tests/test_validate_gpu.py checks the CUDA-kernel ops (their raw kernels' twins, 2 and 3 devices); this file covers
the rest of the registry on 2 devices, which keeps it to seconds (every op's GPU row plus each signature once)."""
import argparse
import io

import numpy as np
import pytest

import strict_device
from oneflow_compat.ops import registry
from oneflow_compat.ops.examples import EXAMPLES
from oneflow_compat.runtime import plan
from oneflow_compat.tools import validate

# Ops whose kernels read device values back by nature (on CuPy as on this fake device); each is checked on the
# device with the reads allowed, and must still make at least one (else drop it from this list).
HOST_READ_OPS = {
    # the output's size is the number of non-zero entries: CuPy's nonzero itself reads that count back (OneFlow's
    # dynamic blob, resized on the host by sync_dynamic_resize)
    "argwhere": "output size depends on the data (nonzero's count is read by the host)",
    # its very purpose: cut a dynamic blob to the size held in a device array (OneFlow's op is named for the sync)
    "sync_dynamic_resize": "slices to a size read from a device array",
    # a blob serialised with its shape header into byte chunks and parsed back (OneFlow v0.3.4's CPU kernel
    # dynamic_binary_split_concat_kernel.cpp): the header bytes are built and read on the host
    "dynamic_binary_split": "serialises a blob with its shape header on the host",
    "dynamic_binary_concat": "parses the shape header of the chunks on the host",
}


def _options(op_types):
    return argparse.Namespace(op_types=op_types, failures_only=True, devices=[2], device="gpu")


def _count_kernel_reads(monkeypatch):
    """Device -> host reads made INSIDE each op's kernels (not validate's fetch of the results), per op type."""
    reads = {}
    device_fn = plan.device_fn

    def counted(op, dev):
        fn = device_fn(op, dev)
        if dev.xp is np:
            return fn

        def run(*args):
            before = strict_device.Syncs.total()
            try:
                return fn(*args)
            finally:
                reads[op.type] = reads.get(op.type, 0) + strict_device.Syncs.total() - before
        return run

    monkeypatch.setattr(plan, "device_fn", counted)
    return reads


def _record_device_api(monkeypatch):
    """What the kernels call on the device: {function name: op types}, {(function name, keyword): op types},
    {array method: op types} (the fake takes numpy's whole namespace; CuPy has less, checked below)."""
    functions, keywords, methods = {}, {}, {}
    current = {"op": None}
    call, getattr_ = strict_device._Function.__call__, strict_device.StrictArray.__getattr__

    def recording_call(self, *args, **kwargs):
        if current["op"]:
            functions.setdefault(self.__name__, set()).add(current["op"])
            for key in kwargs:
                keywords.setdefault((self.__name__, key), set()).add(current["op"])
        return call(self, *args, **kwargs)

    def recording_getattr(self, name):
        value = getattr_(self, name)
        if current["op"] and callable(value):
            methods.setdefault(name, set()).add(current["op"])
        return value

    monkeypatch.setattr(strict_device._Function, "__call__", recording_call)
    monkeypatch.setattr(strict_device.StrictArray, "__getattr__", recording_getattr)
    device_fn = plan.device_fn

    def in_op(op, dev):
        fn = device_fn(op, dev)

        def run(*args):
            current["op"] = op.type
            try:
                return fn(*args)
            finally:
                current["op"] = None
        return run

    monkeypatch.setattr(plan, "device_fn", in_op)
    return functions, keywords, methods


_DEVICE_API = {}  # what the run below recorded, for the CuPy check (which reruns it when run alone)


def _validate_all_on_the_device(monkeypatch):
    strict_device.install(monkeypatch, "gpu", allow_syncs=False)
    api = _record_device_api(monkeypatch)
    reads = _count_kernel_reads(monkeypatch)
    op_types = sorted(t for t in EXAMPLES if t not in HOST_READ_OPS)
    out = io.StringIO()
    code = validate.run(_options(op_types), out)
    _DEVICE_API.update(zip(("functions", "keywords", "methods"), api))
    return code, out.getvalue(), reads, op_types


def test_every_op_with_examples_runs_on_the_device_without_host_reads(monkeypatch):
    code, text, reads, op_types = _validate_all_on_the_device(monkeypatch)
    assert code == 0, text
    assert text.splitlines()[-1].endswith(", 0 failed")
    assert set(reads) == set(op_types)  # every op's kernels ran on the device
    assert {t: n for t, n in reads.items() if n} == {}


def test_the_kernels_call_only_what_cupy_has(monkeypatch):
    """Every function, keyword and array method the kernels used on the fake device exists in CuPy (the fake
    offers numpy's whole namespace: `indices(sparse=True)` passed there and fails on CuPy). Keywords are checked
    where CuPy's function has an inspectable signature."""
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed (the `test` extra installs it; no GPU needed)")
    import inspect

    if not _DEVICE_API:
        _validate_all_on_the_device(monkeypatch)
    missing = []
    for name, users in sorted(_DEVICE_API["functions"].items()):
        target = cupy
        for part in name.split(".")[1:]:  # "strict_device.linalg.inv" -> cupy.linalg.inv
            target = getattr(target, part, None)
        if target is None:
            missing.append("cupy.%s (%s)" % (name.split(".", 1)[1], ", ".join(sorted(users))))
            continue
        try:
            params = inspect.signature(target).parameters
        except (TypeError, ValueError):  # a compiled function without a signature: its keywords unchecked
            continue
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            continue
        for (used, key), users_of_key in sorted(_DEVICE_API["keywords"].items()):
            if used == name and key not in params:
                missing.append("cupy.%s(%s=) (%s)" % (name.split(".", 1)[1], key, ", ".join(sorted(users_of_key))))
    for name, users in sorted(_DEVICE_API["methods"].items()):
        if not hasattr(cupy.ndarray, name):
            missing.append("cupy.ndarray.%s (%s)" % (name, ", ".join(sorted(users))))
    assert missing == []


@pytest.mark.parametrize("op_type", sorted(HOST_READ_OPS))
def test_host_read_ops_pass_on_the_device_and_still_read_the_host(monkeypatch, op_type):
    strict_device.install(monkeypatch, "gpu", allow_syncs=True)
    reads = _count_kernel_reads(monkeypatch)
    out = io.StringIO()
    assert validate.run(_options([op_type]), out) == 0, out.getvalue()
    assert reads.get(op_type, 0) > 0, "%s no longer reads the host: drop it from HOST_READ_OPS" % op_type


def test_the_host_read_list_names_ops_with_examples():
    validate.load_all_ops()
    assert set(HOST_READ_OPS) <= set(EXAMPLES) & set(registry.all_types())


def test_a_host_read_inside_a_kernel_fails_the_op(monkeypatch):
    """The test can fail: a kernel that reads a device value back (here relu given an `int()` of its input's
    maximum) is reported as a failure of that op's GPU row."""
    strict_device.install(monkeypatch, "gpu", allow_syncs=False)
    validate.load_all_ops()
    defn = registry.get("relu")
    relu = defn.kernel

    def reads_back(xp, x, *args, **kwargs):
        if xp is not np:
            int(xp.max(x) > 0)
        return relu(xp, x, *args, **kwargs)

    monkeypatch.setattr(defn, "kernel", reads_back)
    out = io.StringIO()
    assert validate.run(_options(["relu"]), out) == 1
    assert "implicit device -> host transfer (int())" in out.getvalue()


# launches of one device run of an op's first example row: the kernels rewritten for the device keep to a few
# launches whatever their sizes (no loop over output cells, no Philox rounds as array operations: kernels/random.py's draws are one launch)
LAUNCH_BOUNDS = {"random_mask_like": 12, "bernoulli": 15, "adaptive_max_pool2d": 20, "adaptive_max_pool3d": 25,
                 "unique_with_counts": 40, "indexed_slices_reduce_sum": 40}


@pytest.mark.parametrize("op_type", sorted(LAUNCH_BOUNDS))
def test_device_launches_of_rewritten_kernels(monkeypatch, op_type):
    strict_device.install(monkeypatch, "gpu", allow_syncs=False)
    validate.load_all_ops()
    example = EXAMPLES[op_type][0]
    inputs = [np.asarray(x) for x in example.make(np.random.default_rng(1000))]
    op = validate.build_op(op_type, inputs, dict(example.attrs or {}), 1)
    op.sbp_in, op.sbp_out = [validate.S.B] * len(inputs), [validate.S.B] * len(op.outputs)
    xp = strict_device.module()
    fn = plan.device_fn(op, plan.DeviceSlot(op, 0, xp, validate._validation_session()))
    args = [xp.asarray(x) for x in inputs]
    before = strict_device.Launches.count
    fn(*args)
    assert 0 < strict_device.Launches.count - before <= LAUNCH_BOUNDS[op_type]


def test_embedding_renorm_on_the_device_equals_the_host_and_a_bad_index_writes_nothing(monkeypatch):
    """embedding_renorm has no example rows (in place, no outputs): its device path checked here, against the
    host's, with no read back inside; a bad index raises with the step's results and leaves the weight whole."""
    from oneflow_compat.kernels import checks, indexing

    strict_device.install(monkeypatch, "gpu", allow_syncs=False)
    xp = strict_device.module()
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((6, 3)) * 3
    for norm_type in (2.0, 1.0, float("inf")):
        want, got = weight.copy(), xp.asarray(weight)
        kw = dict(max_norm=1.5, norm_type=norm_type, num_embeddings=9, offset=2)
        indices = np.array([2, 3, 3, 8, 0])  # rows 0..1 and 8 are other pieces'
        indexing.embedding_renorm(np, want, indices, **kw)
        indexing.embedding_renorm(xp, got, xp.asarray(indices), **kw)
        checks.raise_failed()
        assert not np.array_equal(want, weight)
        np.testing.assert_array_equal(got.get(), want)
    got = xp.asarray(weight)
    indexing.embedding_renorm(xp, got, xp.asarray(np.array([0, 11])), max_norm=0.1, norm_type=2.0,
                              num_embeddings=9)
    np.testing.assert_array_equal(got.get(), weight)
    with pytest.raises(IndexError, match="^embedding_renorm: index 11 is out of range for 9 embeddings$"):
        checks.raise_failed()


@pytest.mark.parametrize("scheme", ["symmetric", "affine"])
def test_moving_average_observer_update_on_the_device_equals_the_host(monkeypatch, scheme):
    """moving_average_min_max_observer (in place, no example rows): the step test and the first-value test made
    on the device (no read back), the same moving extremes as the host's, updates stopping after the last step."""
    from oneflow_compat.kernels import quantization

    strict_device.install(monkeypatch, "gpu", allow_syncs=False)
    xp = strict_device.module()
    rng = np.random.default_rng(3)
    host = [np.zeros(1, np.float32), np.zeros(1, np.float32)]
    device = [xp.asarray(h) for h in host]
    kw = dict(stop_update_after_iters=2, training=True, quantization_scheme=scheme, momentum=0.9)
    for step in range(4):
        x = (rng.standard_normal(8) * (step + 1)).astype(np.float32)
        quantization.moving_average_min_max_update(np, x, np.array([step]), *host, **kw)
        quantization.moving_average_min_max_update(xp, xp.asarray(x), xp.asarray(np.array([step])), *device, **kw)
        np.testing.assert_array_equal(device[0].get(), host[0])
        np.testing.assert_array_equal(device[1].get(), host[1])
    assert host[0][0] != 0
