"""A bad index on a device is a clear error at the next fetch, with no synchronisation per op (kernels/checks.py).

On the host an index op raises at once (ValueError / IndexError naming the op and the index). On a device the op
reads nothing back (OneFlow's CUDA kernels assert on the device instead of waiting for it); its check stays on the
device and the next read of any device value on the host — `.numpy()`, `.item()`, `.tolist()`, a job's results, a
graph's output — brings the check's flag and the bad index down in the same transfer and raises the host's error,
words for words, once. Counted on the strict fake device (tests/strict_device.py: every device -> host transfer
counted, implicit ones refused): 0 synchronisations from the index ops, 1 at the fetch. Where CuPy has a usable GPU
(the suite under ONEFLOW_COMPAT_DEVICE=gpu on a GPU machine) the same tests run on it too (the `device` fixture's
"cuda"), the errors and their words asserted there (the fake's counters stand still on a real GPU).
"""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
import strict_device
from cpu_reference import on_cpu
from kernel_testing import CUPY
from oneflow_compat.backend import devices
from oneflow_compat.kernels import checks
from oneflow_compat.runtime import context

_EAGER = {
    "embedding": (lambda d: flow.nn.functional.embedding(flow.tensor(np.array([1, -1]), device=d),
                                                          flow.ones(4, 3, device=d)),
                  ValueError, "gather: negative index -1"),
    "one_hot": (lambda d: flow.nn.functional.one_hot(flow.tensor(np.array([0, 5]), device=d), 4),
                ValueError, "one_hot: index 5 out of range [0, 4)"),
    "gather": (lambda d: flow.gather(flow.ones(4, 3, device=d), 1, flow.tensor(np.array([[0, 3, 1]] * 4), device=d)),
               ValueError, "batch_gather: indices must lie in [0, 3)"),
    "cross_entropy": (lambda d: flow.nn.functional.cross_entropy(flow.zeros(2, 3, device=d),
                                                                 flow.tensor(np.array([0, 3]), device=d)),
                      ValueError, "sparse_softmax_cross_entropy: label 3 is out of range [0, 3)"),
}

_FETCHES = {"numpy": lambda t: t.numpy(), "item": lambda t: t.sum().item(), "tolist": lambda t: t.tolist()}


def _fake(monkeypatch):
    """The strict fake device for "cuda" tensors and "gpu" placements, implicit synchronisations refused."""
    return strict_device.install(monkeypatch, "gpu", allow_syncs=False)


@pytest.fixture(params=["fake", "cupy"])
def device(request, monkeypatch):
    """`device()` puts "cuda" tensors and "gpu" placements on the device under test and returns its array module:
    the strict fake (synchronisations counted), or CuPy on a GPU. Called after the test's CPU reference (the fake
    replaces the device switch, so `on_cpu` inside it would run on the fake)."""
    if request.param == "cupy" and (CUPY is None or request.config.pluginmanager.has_plugin("strict_device")):
        pytest.skip("CuPy with a usable GPU is not available (the fake device runs this test)")
    return lambda: _fake(monkeypatch) if request.param == "fake" else CUPY


@pytest.mark.parametrize("fetch", sorted(_FETCHES))
@pytest.mark.parametrize("op", sorted(_EAGER))
def test_an_eager_index_op_waits_for_nothing_and_its_error_comes_at_the_fetch(device, op, fetch):
    make, error, words = _EAGER[op]
    with on_cpu():
        with pytest.raises(error) as on_host:
            make("cpu")  # CPU: at once
    assert str(on_host.value) == words
    xp = device()
    syncs = strict_device.Syncs.total
    before = syncs()
    out = make("cuda")
    assert syncs() == before  # 0 synchronisations from the op
    assert checks.pending_count() == 1
    with pytest.raises(error) as on_device:
        _FETCHES[fetch](out)
    assert str(on_device.value) == words  # the CPU's words, naming the op and the index
    # and the CPU's notes naming the eager op (its placement's device aside), then that the device checked it
    assert on_device.value.__notes__ == [n.replace(" on cpu ranks ", " on gpu ranks ")
                                         for n in on_host.value.__notes__] + [checks.DEVICE_NOTE]
    assert syncs() == before + (xp is not CUPY)  # the value and the check came down in one transfer
    assert checks.pending_count() == 0
    good = flow.ones(2, device="cuda") * 2
    np.testing.assert_array_equal(good.numpy(), [2, 2])  # raised once: a later fetch is not blamed


def _graph_calls(device, batches):
    emb = flow.nn.Embedding(4, 3).to(device)

    class Lookup(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.emb = emb

        def build(self, ids):
            return self.emb(ids).sum()

    graph, calls = Lookup(), []
    syncs = strict_device.Syncs.total
    for ids in batches:
        before, at_call = syncs(), None
        try:
            out = graph(flow.tensor(np.array(ids), device=device))  # (the CPU raises here)
            at_call = syncs() - before
            calls.append(("ok", float(out.numpy()), at_call, syncs() - before - at_call))
        except ValueError as e:
            calls.append((str(e), at_call, syncs() - before - (at_call or 0)))
            calls.append(e.__notes__)
    return calls


def test_an_nn_graph_step_with_a_bad_index_fails_at_its_output_fetch(device):
    batches = ([0, 1], [1, -1], [2, 3])
    with on_cpu():
        want = _graph_calls("cpu", batches)
    xp = device()
    assert want[1:3] == [("gather: negative index -1", None, 0), [
        "(while running op 'emb-embedding_0' of type 'embedding' in job 'Lookup_0')",
        "(while running nn.Graph 'Lookup_0' call #2)"]]
    got = _graph_calls("cuda", batches)
    one = int(xp is not CUPY)  # (the fake counts transfers; on a GPU its counters stand still)
    assert got[0][0] == "ok" and got[0][2:] == (0, one)  # the step: no sync; its output's fetch: one
    assert got[1] == ("gather: negative index -1", 0, one)  # the bad step: no sync either; the error at the fetch
    assert got[2] == [note.replace("Lookup_0", "Lookup_1") for note in want[2]] + [checks.DEVICE_NOTE]
    assert got[3][0] == "ok" and got[3][2:] == (0, one)  # the next step is not blamed


def _legacy_calls(batches):
    flow.clear_default_session()
    flow.config.gpu_device_num(1)

    @flow.global_function()
    def lookup(params: tp.Numpy.Placeholder((4, 3)),
               ids: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> tp.Numpy:
        return flow.gather(params, ids)

    params, calls, notes = np.arange(12, dtype=np.float32).reshape(4, 3), [], []
    syncs = strict_device.Syncs.total
    for ids in batches:
        before = syncs()
        try:
            calls.append(lookup(params, np.array(ids, np.int32)))
        except ValueError as e:
            calls.append(str(e))
            notes.extend(e.__notes__)
        calls.append(syncs() - before)
    return calls, notes


def test_a_legacy_job_with_a_bad_index_fails_with_its_one_synchronisation(device):
    batches = ([0, 1], [3, -1], [2, 3])
    with on_cpu():
        want, want_notes = _legacy_calls(batches)
    xp = device()
    assert want[2] == "gather: negative index -1" and want_notes
    got, notes = _legacy_calls(batches)
    # the op and the job named as on the CPU (under the fake device's plugin `on_cpu` runs on the fake too)
    assert notes == [n for n in want_notes if n != checks.DEVICE_NOTE] + [checks.DEVICE_NOTE]
    one = 1 if xp is not CUPY else 0  # (the fake counts transfers; on a GPU its counters stand still)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:4] == [one, "gather: negative index -1", one]  # the results and the check: one transfer a call
    np.testing.assert_array_equal(got[4], want[4])
    assert got[5] == one


def test_unfetched_checks_fold_on_the_device_and_the_first_failure_wins(device):
    # a loop that never fetches holds a bounded number of checks: past FOLD_AT they fold on the device into one
    # record (no transfer); the fetch raises the first failure made, named by its own words and values
    fake = xp = device()
    syncs = strict_device.Syncs.total
    before = syncs()
    for step in range(5 * checks.FOLD_AT):
        index = fake.asarray(np.array([step % 7 - (step == 150) * 20, 3]))
        checks.require(fake, fake.min(index) < 0, "lookup: negative index %d in %s at step %d of %d",
                       fake.min(index), index, step, 5 * checks.FOLD_AT)
        if step == 200:  # a later failure of another check: not the first
            checks.require(fake, fake.asarray(True), "other: %d", fake.asarray(9), error=IndexError)
        assert checks.pending_count() <= checks.FOLD_AT + 1
    assert syncs() == before  # folding reads nothing back
    with pytest.raises(ValueError, match=r"^lookup: negative index -17 in \[-17, 3\] at step 150 of 320$"):
        devices.to_host(fake.zeros(2))
    assert syncs() == before + (xp is not CUPY)
    for step in range(3 * checks.FOLD_AT):  # folded checks that all pass raise nothing
        checks.require(fake, fake.asarray(step < 0), "never %d", step)
    np.testing.assert_array_equal(devices.to_host(fake.ones(2)), [1, 1])
    assert checks.pending_count() == 0


def test_a_fresh_context_forgets_unread_checks(device):
    # a test (or a program's context reset) is not blamed for a bad index of the one before it (the first GPU run
    # raised a kernel test's unread label check in the next test on the same worker)
    fake = device()
    checks.require(fake, fake.asarray(True), "gather: negative index %d", fake.asarray(-1))
    context.reset()
    assert checks.pending_count() == 0
    np.testing.assert_array_equal(devices.to_host(fake.ones(2)), [1, 1])


def test_checks_of_two_devices_come_down_once_per_device(monkeypatch):
    # each device's flags come down in one transfer from that device; the first failure in order is raised
    fake = _fake(monkeypatch)

    class OnDevice:
        def __init__(self, k):
            self.id = k

    def on(k, value):
        a = fake.asarray(np.asarray(value))
        return _Placed(a, OnDevice(k))

    syncs = strict_device.Syncs.total
    checks.require(fake, on(0, False), "zero %d", on(0, 1))
    checks.require(fake, on(1, True), "one %d", on(1, 7))
    checks.require(fake, on(0, True), "two %d", on(0, 8))
    before = syncs()
    with pytest.raises(ValueError, match="^one 7$"):
        checks.raise_failed()
    assert syncs() == before + 2


class _Placed(strict_device.StrictArray):
    """A fake device array that says which device holds it (CuPy's `.device.id`)."""
    __slots__ = ("device",)

    def __init__(self, array, device):
        super().__init__(array._data)
        self.device = device


def test_a_captured_cuda_graph_step_checks_its_indices_at_each_replay(monkeypatch):
    # the checks a captured step makes are recomputed by each replay and read with its results; a check made
    # before the capture (an earlier op's) is raised once, at the capturing call's fetch, and never replayed
    from oneflow_compat.runtime import cuda_graph

    monkeypatch.setenv(cuda_graph.ENV, "1")
    fake = strict_device.install(monkeypatch, "gpu", allow_syncs=False, gpus=1)
    flow.config.gpu_device_num(1)

    @flow.global_function()
    def lookup(params: tp.Numpy.Placeholder((4, 3)),
               ids: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> tp.Numpy:
        return flow.gather(params, ids)

    params = np.arange(12, dtype=np.float32).reshape(4, 3)

    def call(ids):
        try:
            return lookup(params, np.array(ids, np.int32))
        except ValueError as e:
            return str(e)

    np.testing.assert_array_equal(call([0, 1]), params[[0, 1]])  # as usual (found capturable)
    checks.require(fake, fake.asarray(True), "earlier: index %d", fake.asarray(9))
    assert call([2, 3]) == "earlier: index 9"  # captured; the earlier check comes down with its results
    assert fake.cuda.captures == 1
    np.testing.assert_array_equal(call([3, 0]), params[[3, 0]])  # replayed: the earlier check is not
    assert call([1, -1]) == "gather: negative index -1"  # replayed with a bad index
    np.testing.assert_array_equal(call([1, 2]), params[[1, 2]])
    assert fake.cuda.launches == 4 and checks.pending_count() == 0


def test_a_large_fetch_brings_the_checks_down_after_it(monkeypatch):
    # above PACK_WITH_CHECKS_BYTES the array is not copied once more to travel with the checks: two transfers
    fake = _fake(monkeypatch)
    big = fake.zeros(devices.PACK_WITH_CHECKS_BYTES // 4 + 1, dtype=np.float32)
    checks.require(fake, fake.asarray(True), "gather: negative index %d", fake.asarray(-3))
    before = strict_device.Syncs.total()
    with pytest.raises(ValueError, match="^gather: negative index -3$"):
        devices.to_host(big)
    assert strict_device.Syncs.total() == before + 2
    assert devices.to_host(big).shape == big.shape and checks.pending_count() == 0


def _indexed(device):
    x = flow.tensor(np.arange(60, dtype=np.float32).reshape(3, 4, 5), device=device, requires_grad=True)
    i = flow.tensor(np.array([[0, 2], [1, -1]]), device=device)
    j = flow.tensor(np.array([4, -5]), device=device)
    before = strict_device.Syncs.total()
    picked = [x[i, 1:3, j], x[:, flow.tensor(np.array([3, 0, -2], np.int32), device=device)], x[1, [0, 3], j]]
    (picked[0].sum() + picked[1].sum() * 2 + picked[2].sum()).backward()
    syncs = strict_device.Syncs.total() - before
    errors = []
    for bad in (lambda: x[:, flow.tensor(np.array([1, 4]), device=device)],
                lambda: x[flow.tensor(np.array([0, -4]), device=device), 0]):
        try:
            bad().numpy()
        except IndexError as e:
            errors.append(str(e))
    return [p.numpy() for p in picked] + [x.grad.numpy()], syncs, errors


def test_tensor_indexing_with_device_index_tensors_reads_nothing_back(device):
    # x[index tensors] on a device: the linear index is made there and checked there (numpy's IndexError words at
    # the next fetch), not read back per indexing as host indices are; the values and gradients equal the CPU's
    with on_cpu():
        want, _, want_errors = _indexed("cpu")
    device()
    assert want_errors == ["index 4 is out of bounds for dimension 1 with size 4",
                           "index -4 is out of bounds for dimension 0 with size 3"]
    got, syncs, errors = _indexed("cuda")
    assert syncs == 0
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert errors == want_errors


def _assigned(device):
    x = flow.tensor(np.zeros((3, 4, 5), np.float32), device=device)
    j = flow.tensor(np.array([4, -5]), device=device)
    before = strict_device.Syncs.total()
    x[flow.tensor(np.array([[0, 2], [1, -1]]), device=device), 1:3, j] = 7.0
    x[:, flow.tensor(np.array([3, 0], np.int32), device=device)] = flow.tensor(np.full((3, 2, 5), 2.0), device=device)
    x[1, [0, 3], j] = flow.tensor(np.array([5.0, 6.0], np.float32), device=device)
    x[..., flow.tensor(np.array([1]), device=device)] = np.array([9.0], np.float32)
    syncs = strict_device.Syncs.total() - before
    errors = []
    for key in ((slice(None), flow.tensor(np.array([1, 4]), device=device)),
                (flow.tensor(np.array([0, -4]), device=device), 0),
                (flow.tensor(np.array([0]), device=device), [0, 9]),
                ([0, 5],)):  # (host indices only: CuPy would wrap 5 around and write row 2)
        try:
            x[key] = -1.0
            x.numpy()
        except IndexError as e:
            errors.append(str(e))
    return x.numpy(), syncs, errors


def test_tensor_assignment_with_device_index_tensors_reads_nothing_back(device):
    # x[index tensors] = value on a device: no index (nor a device value) read back; a bad index is numpy's
    # IndexError at the next fetch and that assignment writes nothing, as on the host
    with on_cpu():
        want, _, want_errors = _assigned("cpu")
    assert want_errors == ["index 4 is out of bounds for axis 1 with size 4",
                           "index -4 is out of bounds for axis 0 with size 3",
                           "index 9 is out of bounds for axis 1 with size 4",
                           "index 5 is out of bounds for axis 0 with size 3"]
    device()
    got, syncs, errors = _assigned("cuda")
    assert syncs == 0
    assert errors == want_errors
    np.testing.assert_array_equal(got, want)  # the failed assignments wrote nothing


def test_a_folded_eager_error_keeps_its_notes(device):
    # eager lookups that are never fetched fold on the device; the first bad one is raised with its op's notes
    with on_cpu():
        with pytest.raises(ValueError) as on_host:
            flow.nn.functional.embedding(flow.tensor(np.array([2, -3])), flow.ones(4, 3))
    device()
    weight = flow.ones(4, 3, device="cuda")
    for step in range(3 * checks.FOLD_AT):
        ids = [step % 4, -3 if step == 70 else 1]
        flow.nn.functional.embedding(flow.tensor(np.array(ids), device="cuda"), weight)
        assert checks.pending_count() <= checks.FOLD_AT + 1
    with pytest.raises(ValueError) as on_device:
        weight.numpy()
    assert str(on_device.value) == str(on_host.value) == "gather: negative index -3"
    assert on_device.value.__notes__ == [n.replace(" on cpu ranks ", " on gpu ranks ")
                                         for n in on_host.value.__notes__] + [checks.DEVICE_NOTE]


def test_replayed_checks_name_the_call_that_replayed_them(monkeypatch):
    # a captured step's checks are put back at every replay (runtime/cuda_graph.py) with the notes of that call
    from oneflow_compat.runtime import activity

    fake = _fake(monkeypatch)
    with activity.operation("nn.Graph 'Step_0' call #2"):
        checks.require(fake, fake.asarray(True), "gather: negative index %d", fake.asarray(-1))
    captured = checks.take_pending()
    with activity.operation("nn.Graph 'Step_0' call #5"):
        checks.restore_pending(captured, again=True)
    with pytest.raises(ValueError) as e:
        checks.raise_failed()
    assert e.value.__notes__ == ["(while running nn.Graph 'Step_0' call #5)", checks.DEVICE_NOTE]


def test_the_device_wraps_an_index_out_of_range_around(device):
    # CuPy's documented difference from numpy ("Differences between CuPy and NumPy: Out-of-bounds indices": an
    # integer array index out of range wraps around, no error) — which is why every index op checks its indices
    # itself (kernels/checks.py); the fake device does the same, so that a missing check shows without a GPU
    xp = device()
    a = xp.asarray(np.arange(10).reshape(2, 5))
    np.testing.assert_array_equal(a[:, xp.asarray(np.array([5, -6, 7]))].get(), [[0, 4, 2], [5, 9, 7]])
    np.testing.assert_array_equal(xp.take(a, xp.asarray(np.array([12])), axis=1).get(), [[2], [7]])
    a[xp.asarray(np.array([3])), 0] = 99
    np.testing.assert_array_equal(a.get()[:, 0], [0, 99])


@pytest.mark.parametrize("op", sorted(_EAGER))
def test_cuda_synchronize_raises_a_pending_index_error_as_oneflows_eager_sync_does(device, op):
    # OneFlow 0.9's flow.cuda.synchronize() runs eager.Sync() first (python/oneflow/cuda/__init__.py at v0.9.0),
    # which raises what the eager instructions failed with: here the pending device checks, in the CPU's words
    make, error, words = _EAGER[op]
    xp = device()
    make("cuda")
    assert checks.pending_count() == 1
    syncs = strict_device.Syncs.total
    before = syncs()
    with pytest.raises(error) as on_device:
        flow.cuda.synchronize()
    assert str(on_device.value) == words
    assert syncs() == before + (xp is not CUPY)  # the checks' one transfer
    assert checks.pending_count() == 0
    flow.cuda.synchronize()  # raised once
    good = flow.ones(2, device="cuda") + 1
    flow.cuda.synchronize()  # nothing pending, nothing raised
    np.testing.assert_array_equal(good.numpy(), [2, 2])
