"""In-place writes inside `nn.Graph.build` (OneFlow 0.9): slice / index / mask assignment on lazy tensors becomes ops
of the job whose output later reads of the tensor see (functional TensorSetItem in lazy mode), with eager's
gradients (the overwritten part of the old tensor gets none, the value the part it filled); an in-place op on an
eager tensor captured in build (a module buffer, a free tensor, a graph input) renames it to the op's output for
the rest of build, while the eager tensor itself is not written (0.9's TensorNameScope; no write-back in
nn/graph/graph.py). Each graph is checked against the same program run eagerly and a numpy reference; the global
case runs on 2 ranks simulated in one process (comm/simulated.py)."""
import numpy as np
import pytest

import oneflow as flow
import oneflow.nn as nn
import simulated_ranks

X = np.arange(12, dtype=np.float32).reshape(3, 4) / 4 - 1
C = (np.arange(12, dtype=np.float32).reshape(3, 4) % 5 - 2) / 3  # the loss's weights: d loss / d y = C


class Assign(nn.Module):
    """y = x * w; y[key] = v * 3; out = y * 2 (later reads see the assignment); loss = sum(out * C)."""

    def __init__(self, key, v_shape):
        super().__init__()
        self.key = key
        self.w = nn.Parameter(flow.tensor(np.linspace(0.5, 2, 12, dtype=np.float32).reshape(3, 4)))
        self.v = nn.Parameter(flow.tensor(np.linspace(-1, 1, int(np.prod(v_shape)),
                                                      dtype=np.float32).reshape(v_shape)))

    def forward(self, x):
        y = x * self.w
        y[self.key(x) if callable(self.key) else self.key] = self.v * 3
        return y * 2


def _numpy_reference(key, w, v):
    """(out, d loss/d w, d loss/d v) of Assign in numpy."""
    y = X * w
    y[key] = v * 3
    out = y * 2
    g_y = 2 * C
    g_w = g_y * X
    g_w[key] = 0  # the overwritten places pass nothing to the old y
    filled = g_y[key] * 3
    g_v = filled.reshape((-1,) + v.shape).sum(0) if filled.shape != v.shape else filled  # (broadcast: summed)
    return out, g_w, g_v


def _train(key, v_shape, graph):
    """(output, w after one SGD step, v after it) of Assign, in an nn.Graph or eagerly."""
    m = Assign(key, v_shape)
    opt = flow.optim.SGD(m.parameters(), lr=1.0)
    c = flow.tensor(C)
    if graph:
        class Train(nn.Graph):
            def __init__(self):
                super().__init__()
                self.m = m
                self.add_optimizer(opt)

            def build(self, x):
                out = self.m(x)
                (out * c).sum().backward()
                return out

        out = Train()(flow.tensor(X))
    else:
        out = m(flow.tensor(X))
        (out * c).sum().backward()
        opt.step()
    return out.numpy(), m.w.numpy(), m.v.numpy()


KEYS = [
    ("rows", np.s_[1:3], (2, 4)),
    ("rows_broadcast_value", np.s_[1:3], (4,)),
    ("strided_columns", np.s_[:, ::2], (3, 2)),
    ("int_and_slice", np.s_[0, 1:], (3,)),
    ("index_list", np.s_[:, [3, 0]], (3, 2)),
    ("host_mask", np.array([True, False, True]), (2, 4)),
]


def _columns_made_in_build(x):  # [3, 0] as an index tensor of the job (a lazy one inside build)
    return (x[0, :2] * 0).long() + flow.tensor(np.array([3, -4], np.int64))


def _rows_made_in_build(x):
    return ((x[:2, 0] * 0).long() + flow.tensor(np.array([2, 0], np.int64)),)


KEYS += [("index_made_in_build", lambda x: (slice(None), _columns_made_in_build(x)), (3, 2)),
         ("ellipsis_and_index_made_in_build", lambda x: (Ellipsis, _columns_made_in_build(x)), (2,)),
         ("rows_made_in_build", _rows_made_in_build, (2, 4))]
HOST_KEYS = {"index_made_in_build": np.s_[:, [3, 0]], "ellipsis_and_index_made_in_build": np.s_[..., [3, 0]],
             "rows_made_in_build": np.s_[[2, 0]]}


@pytest.mark.parametrize("name,key,v_shape", KEYS, ids=[k[0] for k in KEYS])
def test_setitem_in_build_equals_eager_and_numpy_with_gradients(name, key, v_shape):
    w0 = np.linspace(0.5, 2, 12, dtype=np.float32).reshape(3, 4)
    v0 = np.linspace(-1, 1, int(np.prod(v_shape)), dtype=np.float32).reshape(v_shape)
    ref_out, g_w, g_v = _numpy_reference(HOST_KEYS.get(name, key), w0, v0)
    g_out, g_wt, g_vt = _train(key, v_shape, graph=True)
    e_out, e_wt, e_vt = _train(key, v_shape, graph=False)
    np.testing.assert_allclose(g_out, ref_out, rtol=1e-6)
    np.testing.assert_allclose(g_wt, w0 - g_w, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g_vt, v0 - g_v, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(g_out, e_out)
    np.testing.assert_allclose(g_wt, e_wt, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g_vt, e_vt, rtol=1e-6, atol=1e-7)


def _eval(build, *inputs):
    class G(nn.Graph):
        def build(self, *args):
            return build(*args)

    return G()(*inputs)


def test_setitem_with_a_mask_and_an_index_tensor_made_in_build():
    def prog(x):
        y = x * 1
        y[y > 0.5] = 7.0  # a lazy mask and a scalar: OneFlow's masked_fill_ path
        row = (x[:, 0] < 0)
        y[row] = flow.tensor(np.array([1, 2, 3, 4], np.float32))  # a mask over the leading dim, a row value
        return y + 1

    got = _eval(prog, flow.tensor(X)).numpy()
    want = prog(flow.tensor(X)).numpy()
    ref = X.copy()
    ref[ref > 0.5] = 7
    ref[X[:, 0] < 0] = [1, 2, 3, 4]
    np.testing.assert_array_equal(want, ref + 1)
    np.testing.assert_array_equal(got, ref + 1)


def test_setitem_with_an_integer_index_made_in_build_beside_a_partial_slice_is_refused_by_name():
    def prog(x):
        y = x * 1
        y[1:, flow.argmax(x, dim=1)] = 0.0
        return y

    with pytest.raises(RuntimeError, match=r"an integer index tensor computed in build\(\) \(shape \(3,\)\) is "
                                           r"supported alone, 0-d or 1-D, with `:` or `...` on the other dims"):
        _eval(prog, flow.tensor(X))


def test_setitem_of_a_value_that_does_not_fit_names_the_shapes():
    def prog(x):
        y = x * 1
        y[1:3] = flow.tensor(np.ones(3, np.float32))
        return y

    with pytest.raises(ValueError, match=r"a value of shape \(3,\) cannot be broadcast to the indexed shape "
                                         r"\(2, 4\)"):
        _eval(prog, flow.tensor(X))


class WithBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", flow.tensor(np.array([1, 2, 3, 4], np.float32)))

    def forward(self, x):
        self.buf.add_(1)
        self.buf[0] = -5.0
        x.mul_(2)
        return x + self.buf


def test_inplace_on_a_buffer_and_an_input_in_build_is_read_back_and_leaves_the_eager_tensors():
    """Later reads in build see the in-place results; after the call the buffer and the input hold what they held
    (OneFlow 0.9 assigns no variable for `add_`: the job's add output is only the buffer's new name in build),
    so a second call gives the same output."""
    m = WithBuffer()

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m

        def build(self, x):
            return self.m(x)

    g = G()
    x = flow.tensor(X)
    ref = X * 2 + np.array([-5, 3, 4, 5], np.float32)
    np.testing.assert_array_equal(g(x).numpy(), ref)
    np.testing.assert_array_equal(m.buf.numpy(), [1, 2, 3, 4])
    np.testing.assert_array_equal(x.numpy(), X)
    np.testing.assert_array_equal(g(x).numpy(), ref)
    # the same program eagerly: the same output (eagerly the tensors themselves are written)
    np.testing.assert_array_equal(WithBuffer()(flow.tensor(X)).numpy(), ref)


def test_inplace_on_a_free_eager_tensor_in_build_passes_gradients_to_the_value():
    """`free.add_(p)`: the free tensor reads as free + p afterwards in build, and p gets the gradient of what read
    it; the free tensor itself is left as it was."""
    free = flow.tensor(np.array([10, 20, 30], np.float32))
    m = nn.Module()
    m.p = nn.Parameter(flow.tensor(np.array([1, 2, 3], np.float32)))
    opt = flow.optim.SGD(m.parameters(), lr=1.0)

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m
            self.add_optimizer(opt)

        def build(self, x):
            free.add_(self.m.p)
            loss = (free * x).sum()
            loss.backward()
            return loss

    x = np.array([1, -1, 2], np.float32)
    loss = Train()(flow.tensor(x))
    np.testing.assert_allclose(loss.numpy(), ((np.array([10, 20, 30]) + [1, 2, 3]) * x).sum())
    np.testing.assert_allclose(m.p.numpy(), np.array([1, 2, 3], np.float32) - x)
    np.testing.assert_array_equal(free.numpy(), [10, 20, 30])


def test_global_setitem_in_build_keeps_the_sbp_and_the_numbers_on_2_ranks():
    w0 = np.linspace(0.5, 2, 12, dtype=np.float32).reshape(3, 4)
    v0 = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
    ref_out, g_w, g_v = _numpy_reference(np.s_[:, 1:3], w0, v0)

    def body():
        pl = flow.placement("cpu", [0, 1])
        s1, b = flow.sbp.split(1), flow.sbp.broadcast
        m = nn.Module()
        m.w = nn.Parameter(flow.tensor(w0).to_global(placement=pl, sbp=b))
        m.v = nn.Parameter(flow.tensor(v0).to_global(placement=pl, sbp=b))
        opt = flow.optim.SGD(m.parameters(), lr=1.0)
        c = flow.tensor(C).to_global(placement=pl, sbp=b)
        seen = {}

        class Train(nn.Graph):
            def __init__(self):
                super().__init__()
                self.m = m
                self.add_optimizer(opt)

            def build(self, x):
                y = (x * self.m.w).to_global(placement=pl, sbp=s1)
                y[:, 1:3] = self.m.v * 3
                seen["sbp"] = y.sbp
                out = y * 2
                (out * c).sum().backward()
                return out

        out = Train()(flow.tensor(X).to_global(placement=pl, sbp=b))
        return seen["sbp"], out.to_global(sbp=b).to_local().numpy(), m.w.to_local().numpy(), m.v.to_local().numpy()

    for sbp, out, w, v in simulated_ranks.on_ranks(2, body, timeout=120):
        assert sbp == (flow.sbp.split(1),)
        np.testing.assert_allclose(out, ref_out, rtol=1e-6)
        np.testing.assert_allclose(w, w0 - g_w, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(v, v0 - g_v, rtol=1e-6, atol=1e-7)


def test_a_mask_made_in_build_with_a_value_per_true_place_is_refused_by_name():
    def prog(x):
        y = x * 1
        y[y > 0.5] = flow.tensor(np.ones(3, np.float32))
        return y

    with pytest.raises(RuntimeError, match=r"with a bool mask computed in build\(\) the value must broadcast over "
                                           r"x's dims after the mask's \(\), got shape \(3,\)"):
        _eval(prog, flow.tensor(X))


def test_a_local_value_into_a_global_tensor_in_build_is_refused_with_oneflows_words():
    pl = flow.placement("cpu", [0])

    def prog(x):
        y = x * 1
        y[0] = flow.tensor(np.ones(4, np.float32))
        return y

    with pytest.raises(RuntimeError, match="tensor_setitem\\(\\): value must be a global tensor when self is global"):
        _eval(prog, flow.tensor(X).to_global(placement=pl, sbp=flow.sbp.broadcast))


def test_augmented_assignment_of_a_buffer_in_build_keeps_the_module_eager():
    """`self.buf += x` in build assigns the in-place result back to the attribute: the module keeps its eager
    buffer (not a lazy tensor of the trace), which reads as the sum for the rest of build."""
    class Acc(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("buf", flow.tensor(np.array([1, 2, 3, 4], np.float32)))

        def forward(self, x):
            self.buf += x
            return self.buf * 1

    m = Acc()
    buf = m.buf

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m

        def build(self, x):
            return self.m(x)

    x = np.array([10, 20, 30, 40], np.float32)
    np.testing.assert_array_equal(G()(flow.tensor(x)).numpy(), x + [1, 2, 3, 4])
    assert m.buf is buf and not m.buf.is_lazy
    np.testing.assert_array_equal(m.buf.numpy(), [1, 2, 3, 4])
    np.testing.assert_array_equal(Acc()(flow.tensor(x)).numpy(), x + [1, 2, 3, 4])
