"""View semantics of local eager tensors (OneFlow 0.9, `oneflow/core/framework/tensor_methods.cpp` at v0.9.0): view
ops share storage with their input, report OneFlow's strides / storage offset / contiguity, in-place ops on a view
reach its base and the base's gradient (torch's CopySlices, the reference here), and global and nn.Graph tensors
keep owning their memory. The views themselves are `oneflow_compat/_global/views.py`."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat._global import views

try:
    import torch
except ImportError:  # the torch references skip without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is the reference")

A = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


def _np_strided(a, shape, strides, offset=0):
    """A writable numpy view of contiguous `a` (strides and offset in elements)."""
    item = a.dtype.itemsize
    return np.lib.stride_tricks.as_strided(a.reshape(-1)[offset:], shape, tuple(s * item for s in strides))



def _lib(x):
    """flow or torch, for the functions (not methods) in the table below, which torch references run too."""
    return flow if isinstance(x, flow.Tensor) else torch


# (name, the view on a flow tensor, the same view on a numpy array / torch tensor)
VIEW_OPS = [
    ("view", lambda x: x.view(-1), lambda a: a.reshape(-1)),
    ("view_sizes", lambda x: x.view(6, 4), lambda a: a.reshape(6, 4)),
    ("reshape", lambda x: x.reshape(4, 6), lambda a: a.reshape(4, 6)),
    ("index_int", lambda x: x[1], lambda a: a[1]),
    ("index_slice", lambda x: x[:, 1:3], lambda a: a[:, 1:3]),
    ("index_step", lambda x: x[:, ::2, 1::2], lambda a: a[:, ::2, 1::2]),
    ("index_none", lambda x: x[..., None], lambda a: a[..., None]),
    ("index_mixed", lambda x: x[None, 1, ::2], lambda a: a[None, 1, ::2]),
    ("index_all", lambda x: x[:], lambda a: a[:]),
    ("transpose", lambda x: x.transpose(0, 2), lambda a: a.transpose(2, 1, 0)),
    ("permute", lambda x: x.permute(1, 2, 0), lambda a: a.transpose(1, 2, 0)),
    ("T", lambda x: x[0].T, lambda a: a[0].T),
    ("narrow", lambda x: x.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
    ("unsqueeze", lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    ("squeeze", lambda x: x[:, :1].squeeze(1), lambda a: a[:, 0]),
    ("select", lambda x: _lib(x).select(x, 1, 2), lambda a: a[:, 2]),
    ("diagonal", lambda x: x.diagonal(0, 1, 2), lambda a: _np_strided(a, (2, 3), (12, 5))),
    ("diagonal_offset", lambda x: x.diagonal(1, 2, 1), lambda a: _np_strided(a, (2, 2), (12, 5), 4)),
    ("as_strided", lambda x: x.as_strided((3, 2), (2, 5), 1),
     lambda a: _np_strided(a, (3, 2), (2, 5), 1)),
    ("unfold", lambda x: x.unfold(2, 2, 1), lambda a: _np_strided(a, (2, 3, 3, 2), (12, 4, 1, 1))),
    ("chunk", lambda x: x.chunk(2, 2)[1], lambda a: a[:, :, 2:]),
    ("split", lambda x: x.split([1, 2], 1)[1], lambda a: a[:, 1:]),
    ("unbind", lambda x: x.unbind(1)[2], lambda a: a[:, 2]),
    ("flatten", lambda x: x.flatten(1), lambda a: a.reshape(2, 12)),
    ("view_as", lambda x: x.view_as(flow.zeros(4, 6)), lambda a: a.reshape(4, 6)),
    ("swapaxes", lambda x: x.swapaxes(0, 1), lambda a: a.swapaxes(0, 1)),
    ("movedim", lambda x: _lib(x).movedim(x, 0, 2), lambda a: np.moveaxis(a, 0, 2)),
    ("detach", lambda x: x.detach(), lambda a: a),
    ("data", lambda x: x.data, lambda a: a),
    ("view_of_view", lambda x: x[1].T[1:], lambda a: a[1].T[1:]),
]

# views that can be written through (an expanded view repeats elements: it is read through its base only)
EXPANDS = [
    ("expand", lambda x: x[:, :1].expand(2, 5, 4), lambda a: np.broadcast_to(a[:, :1], (2, 5, 4))),
    ("expand_as", lambda x: x[0, 0].expand_as(flow.zeros(3, 4)), lambda a: np.broadcast_to(a[0, 0], (3, 4))),
]


@pytest.mark.parametrize("name, view, np_view", VIEW_OPS, ids=[o[0] for o in VIEW_OPS])
def test_writing_through_a_view_writes_its_base_and_the_base_reaches_the_view(name, view, np_view):
    x = flow.tensor(A)
    y = view(x)
    base = A.copy()
    np.testing.assert_array_equal(y.numpy(), np_view(base))
    # through the view: an in-place op, then an assignment
    y.mul_(-1)
    np_view(base)[...] *= -1
    np.testing.assert_array_equal(x.numpy(), base)
    y[...] = 7 if y.ndim == 0 else flow.tensor(np.full(tuple(y.shape), 7, np.float32))
    np_view(base)[...] = 7
    np.testing.assert_array_equal(x.numpy(), base)
    # through the base
    x.add_(1)
    base += 1
    np.testing.assert_array_equal(y.numpy(), np_view(base))
    x[0, 1] = 100
    base[0, 1] = 100
    np.testing.assert_array_equal(y.numpy(), np_view(base))


@pytest.mark.parametrize("name, view, np_view", EXPANDS, ids=[o[0] for o in EXPANDS])
def test_an_expanded_view_reads_its_base(name, view, np_view):
    x = flow.tensor(A)
    y = view(x)
    base = A.copy()
    np.testing.assert_array_equal(y.numpy(), np_view(base))
    x.mul_(3)
    base *= 3
    np.testing.assert_array_equal(y.numpy(), np_view(base))
    y.fill_(5)  # writable, as OneFlow's stride-0 view: the elements it repeats are written
    expected = base.copy()
    if name == "expand":
        expected[:, 0] = 5
    else:
        expected[0, 0] = 5
    np.testing.assert_array_equal(x.numpy(), expected)
    np.testing.assert_array_equal(y.numpy(), np.full(np_view(base).shape, 5, np.float32))


def test_the_examples_of_the_brief():
    x = flow.tensor(A)
    y = x[0]
    y.fill_(1)
    assert (x.numpy()[0] == 1).all() and (x.numpy()[1] == A[1]).all()
    x = flow.tensor(A)
    x.view(-1)[3] = 7
    assert x.numpy()[0, 0, 3] == 7 and x.numpy().sum() == A.sum() - 3 + 7
    w = flow.nn.Parameter(flow.tensor(np.ones((3, 4), np.float32)))
    w.data[:, :2].zero_()
    np.testing.assert_array_equal(w.numpy(), np.array([[0, 0, 1, 1]] * 3, np.float32))


# --- strides, offsets, contiguity, against torch --------------------------------------------------------------------
def _torch_view(name, t):
    for n, view, _ in VIEW_OPS + EXPANDS:
        if n == name:
            return view(t)


@needs_torch
@pytest.mark.parametrize("name", [o[0] for o in VIEW_OPS + EXPANDS if o[0] not in ("data", "view_as", "expand_as")])
def test_stride_storage_offset_and_contiguity_are_torchs(name):
    x = flow.tensor(A)
    t = torch.tensor(A)
    view = dict((o[0], o[1]) for o in VIEW_OPS + EXPANDS)[name]
    y, ty = view(x), view(t)
    assert tuple(y.shape) == tuple(ty.shape)
    # (the stride of a dim of size 1 is never used; OneFlow's getitem reshapes with ComputeStride where torch
    # keeps its unsqueeze's stride: x[None, 1, ::2] is (16, 8, 1) in OneFlow's derivation, (24, 8, 1) in torch's)
    used = [k for k, n in enumerate(ty.shape) if n != 1]
    assert [y.stride()[k] for k in used] == [ty.stride()[k] for k in used], name
    assert y.storage_offset() == ty.storage_offset(), name
    assert y.is_contiguous() == ty.is_contiguous(), name


def test_strides_of_the_views_torch_has_no_method_for():
    x = flow.tensor(A)
    assert flow.select(x, 1, 2).stride() == (12, 1) and flow.select(x, 1, 2).storage_offset() == 8
    d = x.diagonal(1, 2, 1)  # dims (2, 1): offset 1 above the diagonal of the (4, 3) matrices
    assert tuple(d.shape) == (2, 2) and d.stride() == (12, 5) and d.storage_offset() == 4
    e = x[0, 0].expand_as(flow.zeros(3, 4))
    assert e.stride() == (0, 1) and not e.is_contiguous()
    assert x.view_as(flow.zeros(4, 6)).stride() == (6, 1)


def test_contiguous_copies_a_non_contiguous_view_only():
    x = flow.tensor(A)
    assert x.contiguous() is x and x.is_contiguous() and x.stride() == (12, 4, 1)
    y = x.permute(0, 2, 1)
    assert not y.is_contiguous() and y.stride() == (12, 1, 4)
    z = y.contiguous()
    assert z is not y and z.is_contiguous() and z.stride() == (12, 3, 1)
    np.testing.assert_array_equal(z.numpy(), A.transpose(0, 2, 1))
    z.fill_(0)  # a copy: the base is untouched
    np.testing.assert_array_equal(x.numpy(), A)
    assert flow.contiguous(y).is_contiguous() if hasattr(flow, "contiguous") else True
    # in place (OneFlow 0.9 test_contiguous.py's _test_inplace_contiguous): y becomes contiguous, not a view
    y2 = y.contiguous_()
    assert y2 is y and y.is_contiguous() and y.stride() == (12, 3, 1)
    y.fill_(0)
    np.testing.assert_array_equal(x.numpy(), A)


def test_view_refuses_strides_that_cannot_express_the_shape_and_reshape_copies():
    x = flow.tensor(A)
    t = x.transpose(1, 2)
    with pytest.raises(RuntimeError, match=r"view size is not compatible with input tensor's size and stride \(at "
                                           r"least one dimension spans across two contiguous subspaces\)\. Use "
                                           r"\.reshape\(\.\.\.\) instead\."):
        t.view(-1)
    r = t.reshape(-1)  # a copy
    np.testing.assert_array_equal(r.numpy(), A.transpose(0, 2, 1).reshape(-1))
    r.fill_(0)
    np.testing.assert_array_equal(x.numpy(), A)
    # a transpose of a size-1 dim keeps a view possible (torch's computeStride)
    s = x[:, :1].transpose(1, 2).view(2, 4)
    s.fill_(-1)
    assert (x.numpy()[:, 0] == -1).all()


def test_empty_tensors_and_disabled_views_give_copies(monkeypatch):
    e = flow.zeros(0, 3)  # OneFlow's IsViewApplicable wants an element
    assert not views.applicable(e) and e[:, 1:].stride() == (2, 1) and e[:, 1:].storage_offset() == 0
    monkeypatch.setattr(views, "_DISABLED", True)  # ONEFLOW_DISABLE_VIEW=1
    x = flow.tensor(A)
    y = x[0]
    y.fill_(0)
    np.testing.assert_array_equal(x.numpy(), A)
    assert y.stride() == (4, 1) and y.storage_offset() == 0


def test_a_sum_with_zero_is_a_new_tensor():
    x = flow.tensor(A)
    y = x + 0
    assert y is not x
    y.add_(1)
    np.testing.assert_array_equal(x.numpy(), A)


# --- autograd ------------------------------------------------------------------------------------------------------
def _both(fn):
    """fn(lib, tensor_from_numpy) run on flow and torch: their results (numpy arrays), flow's first."""
    out = []
    for lib in (flow, torch):
        out.append([np.asarray(r.detach().numpy() if hasattr(r, "detach") else r)
                    for r in fn(lib, lambda a, **kw: lib.tensor(a, **kw))])
    return out


W = np.random.default_rng(0).standard_normal((3, 4))


@needs_torch
def test_an_inplace_op_on_a_view_reaches_the_bases_gradient():
    def run(lib, T):
        w = T(W, requires_grad=True)
        x = w * 2
        y = x[1]
        y.mul_(3)  # x's row 1 tripled, in x's history
        z = x.T
        loss = (x * x).sum() + (y * 5).sum() + z[0].sum()
        loss.backward()
        return [w.grad, x, y, z]

    ours, ref = _both(run)
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@needs_torch
def test_views_follow_an_inplace_op_on_their_base_with_gradients():
    def run(lib, T):
        w = T(W, requires_grad=True)
        x = w * 2
        v = x[:, 1]
        u = x.view(12)[3:7]
        x.mul_(w)  # the base takes the product; its views read it, and their gradients reach w through it
        ((v * v).sum() + (u * 3).sum()).backward()
        return [w.grad, v, u]

    ours, ref = _both(run)
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@needs_torch
def test_inplace_ops_on_overlapping_views_and_views_of_views():
    def run(lib, T):
        w = T(W, requires_grad=True)
        x = w * 3  # (an op whose backward reads neither its input nor its output, which the in-place ops change)
        a = x[0:2]
        b = x[1:3, 1:]
        a.add_(w[0:2] ** 2)
        b.mul_(2)
        c = b.T[0]
        c.sub_(1)
        loss = (x ** 2).sum() + (a * b[:1, :1].sum()).sum()
        loss.backward()
        return [w.grad, x, a, b, c]

    ours, ref = _both(run)
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10)


@needs_torch
def test_an_inplace_op_on_a_view_of_a_base_without_gradient_makes_the_base_record_it():
    def run(lib, T):
        x = T(np.zeros((3, 4)))
        w = T(W[0], requires_grad=True)
        x[1].add_(w)
        assert x.requires_grad and not x.is_leaf
        (x * x).sum().backward()
        return [w.grad, x]

    ours, ref = _both(run)
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_an_inplace_op_with_gradients_on_a_view_of_a_leaf_is_refused_as_torch_refuses_it():
    w = flow.tensor(W, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^a view of a leaf Variable that requires grad is being used in an "
                                           r"in-place operation\.$"):
        w[0].add_(1)
    with pytest.raises(RuntimeError, match="leaf Tensor that requires grad is being used in an in-place"):
        w.add_(1)
    np.testing.assert_array_equal(w.numpy(), W)
    with flow.no_grad():  # without gradients it writes (an optimizer's update)
        w[0].add_(1)
        w[1:, :2].zero_()
    expected = W.copy()
    expected[0] += 1
    expected[1:, :2] = 0
    np.testing.assert_array_equal(w.numpy(), expected)
    assert w.is_leaf and w.requires_grad


def test_a_value_saved_for_backward_is_not_changed_by_an_inplace_op_on_a_view():
    # `x * x` saves x; the in-place op on a view of x gives x new storage, so the product's gradient is that of the
    # values it multiplied (what the forward computed), as for an in-place op on x itself
    w = flow.tensor(W, requires_grad=True)
    x = w * 2
    p = x * x
    x[0].mul_(10)
    p.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 8 * W, rtol=1e-12)
    np.testing.assert_allclose(x.detach().numpy()[0], 20 * W[0], rtol=1e-12)


def test_an_inplace_op_with_gradients_on_a_detached_view_changes_values_not_history():
    w = flow.tensor(W, requires_grad=True)
    x = w * 2
    d = x.detach()
    g = flow.tensor(np.ones(4), requires_grad=True)
    d[0].add_(g)  # d is a view of x without autograd: x's values change, its history does not
    np.testing.assert_allclose(x.detach().numpy()[0], 2 * W[0] + 1, rtol=1e-12)
    x.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full(W.shape, 2.0))
    assert g.grad is None


@needs_torch
def test_gradients_through_every_view_op_match_torch():
    names = [o[0] for o in VIEW_OPS if o[0] not in ("detach", "data", "view_as")]
    ops = dict((o[0], o[1]) for o in VIEW_OPS + EXPANDS)
    for name in names + ["expand"]:
        rng = np.random.default_rng(1)
        a = rng.standard_normal(A.shape)
        c = rng.standard_normal(A.shape)

        def run(lib, T):
            w = T(a, requires_grad=True)
            x = w * T(c)
            y = ops[name](x)
            (y * y).sum().backward()
            return [w.grad, y]

        ours, ref = _both(run)
        for u, v in zip(ours, ref):
            np.testing.assert_allclose(u, v, rtol=1e-12, err_msg=name)


# --- what keeps value semantics ------------------------------------------------------------------------------------
def test_global_tensors_copy():
    p = flow.placement("cpu", ranks=[0])
    x = flow.tensor(A).to_global(p, flow.sbp.broadcast)
    for name, view, _ in VIEW_OPS + EXPANDS:
        if name in ("detach", "data", "index_all"):
            continue
        y = view(x)
        assert y.is_global and y.is_contiguous() and y.storage_offset() == 0, name
        assert y.stride() == views.contiguous_strides(tuple(y.shape)), name
        y.to_local().fill_(-5)
        np.testing.assert_array_equal(x.numpy(), A, err_msg=name)


def test_a_graph_computes_what_eager_computes_and_leaves_its_input_alone():
    class G(flow.nn.Graph):
        def build(self, x):
            y = x.transpose(0, 1)[1:].reshape(-1)
            return y * 2 + x.view(-1)[:y.shape[0]]

    x = flow.tensor(A)
    out = G()(x)
    ref = A.transpose(1, 0, 2)[1:].reshape(-1) * 2 + A.reshape(-1)[:16]
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(x.numpy(), A)
    assert out.is_contiguous() and out.storage_offset() == 0


# --- kernels on strided inputs ----------------------------------------------------------------------------------------
def test_ops_on_non_contiguous_views_give_the_values_of_their_copies():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 6, 5)).astype(np.float32)
    x = flow.tensor(a)
    v = x.permute(2, 0, 1)[:, 1:, ::2]  # strided, offset, transposed
    c = v.contiguous()
    assert not v.is_contiguous() and c.is_contiguous()
    conv = flow.nn.Conv2d(5, 3, 3, padding=1)
    for fn in [lambda t: t.exp(), lambda t: t.sum(1), lambda t: t.softmax(-1), lambda t: t @ t.transpose(1, 2),
               lambda t: flow.relu(t) * t, lambda t: t.max(0)[0], lambda t: conv(t[None]),
               lambda t: flow.cat([t, t], 1), lambda t: t[t > 0]]:
        np.testing.assert_allclose(fn(v).detach().numpy(), fn(c).detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(x.numpy(), a)  # and none wrote its input


def test_a_strided_array_given_to_from_numpy_keeps_its_strides_and_its_views_share_it():
    # OneFlow v0.9.0 tensor_api.cpp:268-330: the tensor takes the array's strides (in elements), offset 0
    f = np.asfortranarray(A[0])
    t = flow.from_numpy(f)
    assert t.stride() == (1, f.shape[0]) and not t.is_contiguous() and t.storage_offset() == 0
    row = t[1]  # a view of the array's memory: writes reach it
    row.fill_(-1)
    f[0, 0] = 50
    assert t.numpy()[0, 0] == 50 and (f[1] == -1).all() and (t.numpy()[1] == -1).all()
    assert row.stride() == (f.shape[0],) and row.storage_offset() == 1


@needs_torch
@pytest.mark.parametrize("shape, target", [((1, 2), (2, 2)), ((1, 2), (1, 1, 2)), ((2, 1), (1, 2, 1)),
                                           ((2, 1, 3), (2, 1, -1, 2, 3)), ((2, 3, 4), (1, 2, -1, -1, -1)),
                                           ((), (1,)), ((), (2, 1))])
def test_expand_strides_are_torchs(shape, target):
    # OneFlow 0.9's test_expand_stride.py compares with torch the same way
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    y, ty = flow.tensor(a).expand(*target), torch.tensor(a).expand(*target)
    assert tuple(y.stride()) == tuple(ty.stride())
    np.testing.assert_array_equal(y.numpy(), ty.numpy())


@needs_torch
def test_views_of_0_dim_tensors_and_as_strided_of_a_permuted_view_are_torchs():
    a = np.random.default_rng(0).standard_normal((2, 3, 2, 2))
    for lib in (flow, torch):
        s = lib.tensor(np.float64(1.5)).view((1, 1, 1))
        assert tuple(s.stride()) == (1, 1, 1)

    def run(lib, T):
        w = T(a, requires_grad=True)
        y = (w * 2).permute(1, 0, 3, 2)
        z = lib.as_strided(y, (2, 2, 3), (1, 1, 2), 2)  # positions in the storage of w * 2, not of y's values
        (z * z).sum().backward()
        return [z, w.grad]

    ours, ref = _both(run)
    for u, v in zip(ours, ref):
        np.testing.assert_allclose(u, v, rtol=1e-12)


def test_tensor_split_gives_pieces_of_their_own_as_oneflow_slices_without_views():
    # OneFlow 0.9's TensorSplitVecFunctor slices with enable_view_slice=false (hsplit / vsplit go through it)
    x = flow.tensor(A)
    for pieces in (flow.tensor_split(x, 2, 2), flow.hsplit(x, [1]), flow.vsplit(x, 2)):
        for p in pieces:
            assert p.is_contiguous() and p.storage_offset() == 0
            p.fill_(-3)
        np.testing.assert_array_equal(x.numpy(), A)
    s = x.split(2, 2)  # split / chunk narrow: views
    s[1].fill_(-3)
    assert (x.numpy()[..., 2:] == -3).all() and s[1].storage_offset() == 2


def test_second_derivatives_through_views_and_the_refusal_through_an_inplace_op_on_a_view():
    w = flow.tensor(np.arange(4.0), requires_grad=True)
    g, = flow.autograd.grad((w * 2).view(2, 2).T.sum() ** 2, w, create_graph=True)  # views are recorded ops
    np.testing.assert_allclose(g.numpy(), np.full(4, 8 * np.arange(4.0).sum()))  # 4 * sum(2w)
    g.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full(4, 8 * 4.0))
    x = w * 2
    x[1:3].mul_(w[1:3])
    with pytest.raises(NotImplementedError, match="the backward of 'copy_slices_backward' is not recorded"):
        flow.autograd.grad((x * x).sum(), w, create_graph=True)


# --- every kernel on strided inputs (what views hand them now) --------------------------------------------------------
def _kernel_ops():
    from oneflow_compat.ops import examples, registry
    from oneflow_compat.tools import validate

    validate.load_all_ops()
    return sorted(t for t in examples.EXAMPLES
                  if registry.get(t).kernel is not None and registry.get(t).build is None)


def _strided_copy(a):
    """`a`'s values in a non-contiguous array (every other element of a wider one), as a strided view is."""
    if a.ndim == 0 or a.size < 2 or a.dtype == object:
        return a.copy()
    wide = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), a.dtype)
    view = wide[..., ::2]
    view[...] = a
    return view


@pytest.mark.parametrize("op_type", _kernel_ops())
def test_every_kernel_reads_strided_inputs_as_their_contiguous_copies_and_writes_none(op_type):
    # views hand kernels strided arrays (and through a view, a kernel writing its input would write the base): on
    # each example row, the kernel's outputs on strided copies of the inputs are those on contiguous ones
    from oneflow_compat.ir import sbp as S
    from oneflow_compat.ops import examples
    from oneflow_compat.runtime import plan
    from oneflow_compat.tools import validate

    for k, row in enumerate(examples.EXAMPLES[op_type]):
        arrays = [np.asarray(a) for a in row.make(np.random.default_rng(k))]
        op = validate.build_op(op_type, arrays, row.attrs, 1)
        op.sbp_in, op.sbp_out = [S.B] * len(arrays), [S.B] * len(op.outputs)
        fn = plan.device_fn(op, plan.DeviceSlot(op, 0, np, validate._validation_session()))
        ref = fn(*[a.copy() for a in arrays])
        strided = [_strided_copy(a) for a in arrays]
        out = fn(*strided)
        for a, s in zip(arrays, strided):
            np.testing.assert_array_equal(s, a, err_msg="%s row %d wrote its input" % (op_type, k))
        refs, outs = (ref, out) if len(op.outputs) > 1 else ((ref,), (out,))
        for r, o in zip(refs, outs):
            if isinstance(r, np.ndarray) and r.dtype != object:
                np.testing.assert_allclose(np.asarray(o), r, rtol=1e-9, atol=1e-12,
                                           err_msg="%s row %d (%s)" % (op_type, k, row.note))


def test_an_optimizer_step_is_seen_through_views_of_the_parameters():
    lin = flow.nn.Linear(4, 3)
    w0 = lin.weight.numpy().copy()
    wt = lin.weight.T  # a view of the parameter (its gradient reaches the weight)
    first_row = lin.weight.data[0]
    x = flow.tensor(np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32))
    loss = (lin(x) ** 2).sum() + wt.sum()
    loss.backward()
    g = lin.weight.grad.numpy().copy()
    flow.optim.SGD(lin.parameters(), lr=0.1).step()
    np.testing.assert_allclose(lin.weight.numpy(), w0 - 0.1 * g, rtol=1e-6)
    np.testing.assert_array_equal(wt.numpy(), lin.weight.numpy().T)
    np.testing.assert_array_equal(first_row.numpy(), lin.weight.numpy()[0])


def test_broadcast_like_gives_a_tensor_of_its_own():
    x = flow.tensor(A[0, :1])
    b = flow.broadcast_like(x, flow.ones(3, 4))
    b.add_(1)  # (the kernel's result was a read-only broadcast of x)
    np.testing.assert_array_equal(b.numpy(), np.broadcast_to(A[0, :1], (3, 4)) + 1)
    np.testing.assert_array_equal(x.numpy(), A[0, :1])


def test_assigning_data_gives_the_tensor_new_storage_and_its_views_keep_the_old():
    x = flow.tensor(A)
    v = x[0]
    x.data = flow.zeros(2, 3, 4)  # as torch's `.data =`: the views taken before read the old storage
    np.testing.assert_array_equal(v.numpy(), A[0])
    v.fill_(9)
    np.testing.assert_array_equal(x.numpy(), np.zeros((2, 3, 4)))
    assert x[1].storage_offset() == 12 and v.storage_offset() == 0


def test_the_c_forms_slice_with_enable_view_slice_reshape_like_broadcast_like_and_contiguous_():
    x = flow.tensor(A)
    y = flow._C.slice(x, [0, 1, 0], [2, 3, 4], [1, 1, 2], enable_view_slice=True)  # view::Slice
    assert y.stride() == (12, 4, 2) and y.storage_offset() == 4
    y.fill_(-1)
    expected = A.copy()
    expected[:, 1:3, 0:4:2] = -1
    np.testing.assert_array_equal(x.numpy(), expected)
    for out in (flow._C.slice(x, [0, 0, 0], [1, 3, 4], [1, 1, 1]),  # enable_view_slice=False: a slice op
                flow._C.reshape_like(x, flow.ones(6, 4)), flow._C.broadcast_like(x[:, :1], flow.ones(2, 3, 4))):
        out.fill_(7)
        np.testing.assert_array_equal(x.numpy(), expected)
    t = x.permute(2, 1, 0)
    assert flow._C.contiguous_(t) is t and t.is_contiguous() and t.stride() == (6, 2, 1)
    np.testing.assert_array_equal(t.numpy(), expected.transpose(2, 1, 0))
