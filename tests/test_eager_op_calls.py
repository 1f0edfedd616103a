"""What one eager op on small tensors runs on the host, counted (not timed: the counts do not move with the load):
the Python functions an 8x8 matmul and add call, on local tensors and on global tensors of one rank. The matmul path
is pinned at the frames it needs — the surface function, the name dispatch, `apply_op_list`, the compiled-op lookup
and its one-kernel runner — and numpy's C `dot` without its Python `__array_function__` dispatcher; an earlier
regression (a context read through a lookup 3 times per op and the kernel behind a Python wrapper) made it 9
frames of ours and 28 calls in all, counted as here (issue 18's eager 8x8 matmul against torch)."""
import collections
import sys

import numpy as np
import pytest

import oneflow_compat as flow

PACKAGES = ("oneflow_compat", "kernels")


def _calls(op, n=10):
    """Per call of `op`: {(where, name): count} of the Python functions it enters ("py" rows: ours, "numpy" rows:
    numpy's Python code) and the C functions it calls ("C")."""
    for _ in range(3):  # compiled and cached
        op()
    seen = collections.Counter()

    def profile(frame, event, arg):
        if event == "call":
            path = frame.f_code.co_filename.replace("\\", "/")
            if "/numpy/" in path:
                seen[("numpy", frame.f_code.co_name)] += 1
            elif any("/%s/" % p in path for p in PACKAGES):
                seen[("py", frame.f_code.co_name)] += 1
        elif event == "c_call":
            seen[("C", getattr(arg, "__name__", "?"))] += 1

    sys.setprofile(profile)
    try:
        for _ in range(n):
            op()
    finally:
        sys.setprofile(None)
    return {k: v / n for k, v in seen.items() if k[1] != "setprofile"}


def _tensors(kind):
    rng = np.random.default_rng(0)
    x, w = (flow.tensor(rng.random((8, 8), dtype=np.float32)) for _ in range(2))
    if kind == "global":
        p = flow.placement("cpu", [0])
        x, w = x.to_global(p, flow.sbp.broadcast), w.to_global(p, flow.sbp.broadcast)
    return x, w


@pytest.mark.parametrize("kind", ["local", pytest.param("global", marks=pytest.mark.cpu_only(
    "counts the host's numpy path; a global tensor on a GPU placement multiplies through cuBLAS"))])
def test_an_eager_matmul_enters_five_python_functions_and_calls_dot_directly(kind):
    x, w = _tensors(kind)
    calls = _calls(lambda: flow.matmul(x, w))
    ours = {name: c for (where, name), c in calls.items() if where == "py"}
    assert ours == {"dispatch": 1, "matmul": 1, "apply_op_list": 1, "compiled_op": 1, "run": 1}, calls
    assert not [k for k in calls if k[0] == "numpy"], calls  # numpy.dot's C function itself: no dispatcher
    assert calls.get(("C", "dot")) == 1, calls
    assert sum(calls.values()) <= 18, calls  # 19 with numpy's dispatcher in front of dot
    np.testing.assert_array_equal(flow.matmul(x, w).numpy(), np.matmul(x.numpy(), w.numpy()))


@pytest.mark.parametrize("kind", ["local", pytest.param("global", marks=pytest.mark.cpu_only(
    "counts the host's numpy path; a global tensor on a GPU placement adds on the device"))])
def test_an_eager_add_enters_the_python_functions_of_its_path(kind):
    x, w = _tensors(kind)
    calls = _calls(lambda: x + w)
    ours = {name: c for (where, name), c in calls.items() if where == "py"}
    assert ours == {"add": 2, "_is_number": 2, "_tensor_pair": 1, "_same_dtype": 1, "apply_op": 1,
                    "apply_op_list": 1, "compiled_op": 1, "run": 1}, calls  # add: the surface's and the kernel's
    assert sum(calls.values()) <= 25, calls
