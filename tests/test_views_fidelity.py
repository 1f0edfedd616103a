"""OneFlow 0.9 fidelity of tensor memory and gradient-hook semantics (the OneFlow v0.9.0 sources each test names):

* `from_numpy` (and `from_dlpack`) of a strided array: the tensor shares the array's memory WITH its strides
  (api/python/functional/tensor_api.cpp:268-330 LocalTensorSharedNumpyDataFunctor), refusing negative strides,
  strides that are not a multiple of the item size and a non-native byte order; `numpy()` of a tensor is an array
  over its memory with its strides (api/python/utils/tensor_utils.h:64-92 EagerLocalTensorToNumpy);
* gradient hooks see the gradient summed over every path, hooks applied wherever the engine reads a gradient
  (core/autograd/autograd_meta.cpp:77-84 current_grad_value, tensor_arg.cpp:28-43, autograd_engine.cpp:83-103);
* the view surface (stride, storage_offset, is_contiguous, contiguous, view/reshape, expand, transpose/permute,
  narrow, unfold, as_strided, diagonal, detach/.data, clone) on contiguous and strided storage, against torch.

Numbers are checked against numpy written here, and against torch where it is installed."""
import warnings

import numpy as np
import pytest

import oneflow_compat as flow
from simulated_ranks import on_ranks

try:
    import torch
except ImportError:  # the torch references skip without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is the reference")

A = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
BIG = np.arange(3 * 4 * 6, dtype=np.float32).reshape(3, 4, 6)


def _elem_strides(a):
    return tuple(s // a.itemsize for s in a.strides)


# strided arrays of shape (2, 3, 4): (name, make(base copy) -> array); each is a view of the base it is given
STRIDED = [
    ("fortran", lambda: np.asfortranarray(A)),
    ("slice", lambda: BIG.copy()[1:3, 1:4, 1:5]),
    ("step", lambda: BIG.copy()[::2, 1:, ::1][:, :3, :4]),
    ("transposed", lambda: np.ascontiguousarray(A.transpose(2, 1, 0)).transpose(2, 1, 0)),
]


# --- 1. from_numpy / numpy() of strided arrays ---------------------------------------------------------------------
@pytest.mark.parametrize("name, make", STRIDED, ids=[s[0] for s in STRIDED])
def test_from_numpy_of_a_strided_array_keeps_its_strides_and_shares_its_memory(name, make):
    a = make()
    t = flow.from_numpy(a)
    assert tuple(t.shape) == a.shape
    assert tuple(t.stride()) == _elem_strides(a) and t.storage_offset() == 0
    assert not t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), a)
    n = t.numpy()  # an array over the tensor's memory, with its strides
    assert np.shares_memory(n, a) and n.strides == a.strides
    t[1, 2, 3] = -5.0  # a write through the tensor reaches the array ...
    assert a[1, 2, 3] == -5.0
    a[0, 1, 2] = 77.0  # ... and the array's write the tensor
    assert t[0, 1, 2].item() == 77.0
    t.mul_(2)  # an in-place op without gradients writes the memory
    np.testing.assert_array_equal(a, n)
    assert a[0, 1, 2] == 154.0


@pytest.mark.parametrize("name, make", STRIDED, ids=[s[0] for s in STRIDED])
def test_views_of_a_strided_from_numpy_tensor_are_views_of_the_array(name, make):
    a = make()
    t = flow.from_numpy(a)
    expected = a.copy()
    v = t.transpose(0, 2)
    assert tuple(v.stride()) == _elem_strides(a.transpose(2, 1, 0))
    v[3, 2, 1] = 100.0  # a[1, 2, 3]
    expected[1, 2, 3] = 100.0
    row = t[1]
    assert tuple(row.stride()) == _elem_strides(a[1]) and row.storage_offset() == _elem_strides(a)[0]
    row.fill_(-1)
    expected[1] = -1
    n = t.narrow(2, 1, 2)
    assert np.shares_memory(n.numpy(), a)
    n.zero_()
    expected[:, :, 1:3] = 0
    np.testing.assert_array_equal(a, expected)
    d = t.detach()  # (`.data` too) the same memory, the same layout
    assert tuple(d.stride()) == tuple(t.stride()) and np.shares_memory(d.numpy(), a)
    t.data.add_(1)
    np.testing.assert_array_equal(a, expected + 1)


def test_contiguous_view_reshape_and_clone_of_a_strided_from_numpy_tensor():
    f = np.asfortranarray(A[0])  # (3, 4), strides (1, 3)
    t = flow.from_numpy(f)
    c = t.contiguous()  # a contiguous copy (0.9 LocalTensor::contiguous, core/framework/tensor.cpp:87-91)
    assert c.is_contiguous() and tuple(c.stride()) == (4, 1) and not np.shares_memory(c.numpy(), f)
    np.testing.assert_array_equal(c.numpy(), A[0])
    assert flow.from_numpy(A.copy()).contiguous().is_contiguous()
    x = flow.from_numpy(A.copy())
    assert x.contiguous() is x  # a contiguous tensor is returned itself
    with pytest.raises(RuntimeError) as e:  # 0.9's ViewFunctor (core/functional/impl/array_functor.cpp:1436-1439)
        t.view(12)
    assert str(e.value) == ("view size is not compatible with input tensor's size and stride (at least one "
                            "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    r = t.reshape(12)  # reshape copies where strides cannot express it
    np.testing.assert_array_equal(r.numpy(), A[0].reshape(12))
    assert not np.shares_memory(r.numpy(), f)
    tv = t.view(3, 2, 2)  # the last dim splits: still a view
    assert tuple(tv.stride()) == (1, 6, 3) and np.shares_memory(tv.numpy(), f)
    cl = t.clone()  # 0.9's clone is a Copy op: a contiguous result of its own (core/framework/tensor.cpp:98-104)
    assert cl.is_contiguous() and not np.shares_memory(cl.numpy(), f)
    np.testing.assert_array_equal(cl.numpy(), A[0])


def test_from_numpy_of_a_broadcast_array_has_zero_strides():
    b = np.broadcast_to(np.arange(4, dtype=np.float32), (3, 4))
    t = flow.from_numpy(b)
    assert tuple(t.stride()) == (0, 1) and not t.is_contiguous()
    np.testing.assert_array_equal((t * 2).numpy(), b * 2)
    np.testing.assert_array_equal(t.sum(0).numpy(), b.sum(0))


def test_from_numpy_refuses_what_oneflow_09_refuses():
    # tensor_api.cpp:272-304, in 0.9's words
    with pytest.raises(TypeError, match="^expected np.ndarray, but got list$"):
        flow.from_numpy([1.0, 2.0])
    with pytest.raises(ValueError) as e:
        flow.from_numpy(np.arange(6.0)[::-1])
    assert str(e.value).startswith("At least one stride in the given numpy array is negative, and tensors with "
                                   "negative strides are not currently supported.")
    raw = np.zeros(40, dtype=np.uint8)
    odd = np.ndarray((3,), dtype=np.float32, buffer=raw, strides=(6,))  # 6 bytes apart: not whole elements
    with pytest.raises(ValueError, match="^given numpy array strides not a multiple of the element byte size"):
        flow.from_numpy(odd)
    swapped = np.arange(3, dtype=np.float32).astype(">f4" if np.little_endian else "<f4")
    with pytest.raises(ValueError, match="^given numpy array has byte order different from the native byte"):
        flow.from_numpy(swapped)


def test_tensor_of_a_strided_array_is_a_contiguous_copy():
    f = np.asfortranarray(A)
    t = flow.tensor(f)
    assert t.is_contiguous() and tuple(t.stride()) == (12, 4, 1) and not np.shares_memory(t.numpy(), f)
    v = t.transpose(0, 1)  # and its own views share its memory
    v[0, 0, 0] = 9.0
    assert t[0, 0, 0].item() == 9.0 and f[0, 0, 0] == 0.0


def test_gradient_through_a_strided_from_numpy_tensor():
    f = np.asfortranarray(A[0])
    t = flow.from_numpy(f).requires_grad_()
    w = np.arange(12, dtype=np.float32).reshape(4, 3)
    (t.transpose(0, 1) * flow.tensor(w)).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), w.T)
    assert t.grad.is_contiguous()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation."):
        t[0].mul_(2)


@needs_torch
def test_from_dlpack_of_a_transposed_torch_tensor_keeps_its_strides():
    # 0.9's fromDLPack keeps the capsule's strides (api/python/dlpack/converter.cpp:91-97)
    src = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    t = flow.from_dlpack(src)
    assert tuple(t.stride()) == tuple(src.stride()) == (1, 4) and not t.is_contiguous()
    t[1, 2] = -1.0
    assert src[1, 2].item() == -1.0
    np.testing.assert_array_equal(t.numpy(), src.numpy())


@needs_torch
@pytest.mark.parametrize("name, make", STRIDED, ids=[s[0] for s in STRIDED])
def test_from_numpy_layouts_equal_torch_from_numpy(name, make):
    a, b = make(), make()
    t = flow.from_numpy(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch warns about a non-writable array: none here)
        r = torch.from_numpy(b)
    assert tuple(t.stride()) == tuple(r.stride()) and t.is_contiguous() == r.is_contiguous()


# --- 2. the view surface against torch, on contiguous and strided storage -----------------------------------------
def _lib(x):
    return flow if isinstance(x, flow.Tensor) else torch


SURFACE = {
    "transpose": lambda t: t.transpose(0, 2),
    "permute": lambda t: t.permute(2, 0, 1),
    "permute_identity": lambda t: t.permute(0, 1, 2),
    "T_of_row": lambda t: t[0].T,
    "t": lambda t: t[0].t(),
    "narrow": lambda t: t.narrow(2, 1, 2),
    "unfold": lambda t: t.unfold(2, 2, 1),
    "unfold_step": lambda t: t.unfold(1, 2, 1).unfold(3, 2, 2),
    "expand": lambda t: t[:, :1, :].expand(2, 3, 4),
    "expand_new_dims": lambda t: t[0, 0].expand(3, 2, 4),
    "expand_as": lambda t: t[:, :1].expand_as(t),
    "as_strided": lambda t: t.as_strided((3, 2), (2, 5), 1),
    "diagonal": lambda t: t.diagonal(0, 1, 2),
    "diagonal_above": lambda t: t.diagonal(1, 1, 2),
    "diagonal_below": lambda t: t.diagonal(-1, 2, 1),
    "select": lambda t: _lib(t).select(t, 1, 2),
    "movedim": lambda t: _lib(t).movedim(t, 0, 2),
    "swapaxes": lambda t: t.swapaxes(0, 1),
    "slice_step": lambda t: t[:, ::2, 1:],
    "index_int": lambda t: t[1],
    "ellipsis": lambda t: t[..., 1],
    "none": lambda t: t[None, :, None],
    "unsqueeze_of_T": lambda t: t.transpose(0, 1).unsqueeze(1),
    "squeeze": lambda t: t[:, :1].squeeze(1),
    "view": lambda t: t.view(6, 4),
    "view_same": lambda t: t.view(2, 3, 4),
    "reshape_same": lambda t: t.reshape(2, 3, 4),
    "reshape_of_T": lambda t: t.transpose(0, 1).reshape(3, 8),
    "flatten": lambda t: t.flatten(1),
    "flatten_of_T": lambda t: t.transpose(1, 2).flatten(1),
    "split": lambda t: t.split(2, dim=2)[1],
    "chunk": lambda t: t.chunk(3, dim=1)[2],
    "unbind": lambda t: t.unbind(1)[1],
    "detach": lambda t: t[:, 1].detach(),
    "data": lambda t: t[:, 1].data,
    "contiguous_of_T": lambda t: t.transpose(0, 2).contiguous(),
}
SOURCES = {  # (flow source, torch source, the memory both should share)
    "contiguous": lambda lib: A.copy(),
    "fortran": lambda lib: np.asfortranarray(A),
    "slice": lambda lib: BIG.copy()[1:3, 1:4, 1:5],
}


@needs_torch
@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("op", list(SURFACE))
def test_view_surface_equals_torch(op, source):
    """shape, stride, storage offset (from the source's), contiguity and whether the result shares the source's
    memory: OneFlow 0.9 computes them as torch does (core/framework/tensor_methods.cpp, view namespace)."""
    fn = SURFACE[op]
    a, b = SOURCES[source](np), SOURCES[source](torch)
    ft, tt = flow.from_numpy(a), torch.from_numpy(b)
    try:
        to = fn(tt)
    except RuntimeError as e:  # torch refuses (`view` across non-contiguous strides): so does 0.9, in its words
        with pytest.raises(RuntimeError) as ours:
            fn(ft)
        assert str(ours.value).split("(")[0] == str(e).split("(")[0]
        return
    fo = fn(ft)
    got = (tuple(fo.shape), tuple(fo.stride()), fo.storage_offset() - ft.storage_offset(), fo.is_contiguous(),
           np.shares_memory(fo.numpy(), a))
    want = (tuple(to.shape), tuple(to.stride()), to.storage_offset() - tt.storage_offset(), to.is_contiguous(),
            np.shares_memory(to.numpy(), b))
    assert got == want
    np.testing.assert_array_equal(fo.numpy(), to.numpy())
    if got[4]:  # a write through the view reaches the source's memory where torch's does
        fo.fill_(-3) if fo.numel() > 1 and 0 not in fo.stride() else None
        to.fill_(-3) if to.numel() > 1 and 0 not in to.stride() else None
        np.testing.assert_array_equal(a, b)


def test_same_shape_reshape_view_and_permute_are_new_views():
    """0.9's Reshape/View/Transpose functors make a view whatever the shape (core/functional/impl/
    array_functor.cpp:1404-1445, math_functor.cpp:1005-1027): another tensor, recording its own gradient."""
    w = flow.tensor(A, requires_grad=True)
    for y in (w.reshape(2, 3, 4), w.view(2, 3, 4), w.permute(0, 1, 2), w.transpose(1, 1)):
        assert y is not w and not y.is_leaf and y.grad_fn is not None
        assert tuple(y.stride()) == (12, 4, 1)
    x = flow.tensor(A)
    y = x.view(2, 3, 4)
    y[0, 0, 0] = 50.0
    assert x[0, 0, 0].item() == 50.0
    assert x.flatten(1, 1) is x and x[0].t()[0].t() is not None  # flatten of one dim is x itself (:366-367)


def test_flatten_refuses_start_after_end_and_dims_out_of_range():
    x = flow.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match=r"^flatten\(\) has invalid args: start_dim \(2\) cannot come after "
                                           r"end_dim \(1\)$"):
        x.flatten(2, 1)
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-3, 2\], but "
                                         r"got 5\)$"):
        x.flatten(5)


def test_expand_checks_in_oneflow_09s_words_and_same_shape_is_a_new_view():
    # core/functional/impl/array_functor.cpp:857-895 (ExpandFunctor)
    x = flow.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match=r"^expand\(tensor\{\(2,3,4\)\}, size=3\): the number of sizes provided \(2\) "
                                           r"must be greater or equal to the number of dimensions in the tensor \(3\)$"):
        x.expand(3, 4)
    with pytest.raises(RuntimeError, match=r"^Trying to create tensor with negative dimension -2$"):
        x.expand(-2, 3, 4)
    with pytest.raises(RuntimeError, match=r"^The expanded size of the tensor \(-1\) isn't allowed in a leading, "
                                           r"non-existing dimension 0$"):
        x.expand(-1, 2, 3, 4)
    with pytest.raises(RuntimeError, match=r"^The expanded size of the tensor \(5\) must match the existing size "
                                           r"\(3\) at non-singleton dimension 1. Target sizes: \(2,5,4\). Tensor "
                                           r"sizes: \(2,3,4\)$"):
        x.expand(2, 5, 4)
    w = flow.tensor(A, requires_grad=True)
    y = w.expand(2, -1, 4)
    assert y is not w and not y.is_leaf and tuple(y.stride()) == (12, 4, 1)


def test_a_kernels_strided_result_is_laid_out_in_c_order_and_its_views_share_it():
    """numpy gives `x.T * 2` a transposed layout; 0.9's output is contiguous: stride() says so, numpy() has those
    strides, a view's writes reach it (before, the views of such a result were silent copies)."""
    x = flow.tensor(A[0])
    y = x.T * 2
    y[0].fill_(-1)
    expected = A[0].T * 2
    expected[0] = -1
    np.testing.assert_array_equal(y.numpy(), expected)
    assert tuple(y.stride()) == (3, 1) and y.numpy().strides == (12, 4)
    d = (x.T * 3).detach()  # a detached twin follows
    n = d.numpy()
    d.view(12)[0] = 5.0
    assert n[0, 0] == 5.0 and n.strides == (12, 4)
    # a global tensor's strided piece: its local tensor (which shares it) laid out so, and still shared
    g = flow.tensor(A[0], placement=flow.placement("cpu", [0]), sbp=flow.sbp.broadcast)
    h = g.T * 2
    local = h.to_local()
    local[1].fill_(7.0)
    assert tuple(local.stride()) == (3, 1) and local.numpy().strides == (12, 4)
    expected = A[0].T * 2
    expected[1] = 7.0
    np.testing.assert_array_equal(h.numpy(), expected)


def test_in_place_op_on_a_view_of_strided_storage_reaches_the_base_gradient():
    """An in-place op with gradients on a view: the base's gradient sees it (torch's CopySlices, the numpy
    derivative written here: d/dw sum(base) where base[0] *= w is sum of base[0] = the original row)."""
    f = np.asfortranarray(A[0].copy())  # (3, 4)
    base = flow.from_numpy(f)
    w = flow.tensor(np.full(4, 2.0, np.float32), requires_grad=True)
    h = base * 1  # a non-leaf holding the values
    h[0].mul_(w)
    h.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), A[0][0])
    np.testing.assert_array_equal(h.detach().numpy()[0], A[0][0] * 2)


# --- 3. gradient hooks ---------------------------------------------------------------------------------------------
def test_a_leaf_hook_sees_the_gradient_summed_over_every_path_once():
    x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    (x * 2 + x * 3 + x * x).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], 5 + 2 * np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_array_equal(x.grad.numpy(), seen[0])
    (x * 4).sum().backward()  # a second pass: the hook sees that pass's gradient, .grad accumulates
    assert len(seen) == 2
    np.testing.assert_array_equal(seen[1], [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(x.grad.numpy(), seen[0] + 4)


def test_a_non_leaf_hook_sees_the_summed_gradient_and_its_result_flows_on():
    x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 2
    seen = []

    def hook(g):
        seen.append(g.numpy().copy())
        return g * 10

    h.register_hook(hook)
    h.register_hook(lambda g: seen.append(g.numpy().copy()))  # the next hook gets the previous one's result
    (h * 1 + h * 2).sum().backward()
    assert len(seen) == 2
    np.testing.assert_array_equal(seen[0], [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(seen[1], [30.0, 30.0, 30.0])
    np.testing.assert_array_equal(x.grad.numpy(), [60.0, 60.0, 60.0])


@pytest.mark.parametrize("retain_first", [True, False])
def test_retain_grad_keeps_the_hooked_gradient_whichever_came_first(retain_first):
    # 0.9's CopyOrAccGrad reads current_grad_value(), which applies every hook (autograd_engine.cpp:83-103)
    x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 2
    if retain_first:
        h.retain_grad()
    h.register_hook(lambda g: g * 10)
    if not retain_first:
        h.retain_grad()
    (h * 1 + h * 2).sum().backward()
    np.testing.assert_array_equal(h.grad.numpy(), [30.0, 30.0, 30.0])
    np.testing.assert_array_equal(x.grad.numpy(), [60.0, 60.0, 60.0])
    assert h.retains_grad and not x.retains_grad


def test_retain_grad_on_a_leaf_changes_nothing():
    # 0.9's TensorImpl::set_retain_grad only marks non-leaves (core/framework/tensor_impl.cpp:60-66)
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    x.retain_grad()
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])  # once, not twice
    with pytest.raises(RuntimeError, match="^Can't retain_grad on Tensor that has requires_grad=False$"):
        flow.tensor([1.0]).retain_grad()


def test_autograd_grad_returns_hooked_gradients():
    # the captured gradient is current_grad_value(): hooks applied (autograd_engine.cpp:417-423)
    x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (gx,) = flow.autograd.grad((x * 2 + x).sum(), x)
    np.testing.assert_array_equal(gx.numpy(), [30.0, 30.0, 30.0])
    assert x.grad is None  # autograd.grad accumulates nothing
    h = x * 2
    h.register_hook(lambda g: g + 1)
    (gh,) = flow.autograd.grad((h * 5).sum(), h)
    np.testing.assert_array_equal(gh.numpy(), [6.0, 6.0, 6.0])


def test_post_accumulation_hooks_run_after_the_hooks_on_the_accumulated_grad():
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    order = []
    x.register_hook(lambda g: (order.append(("hook", g.numpy().tolist())), g * 2)[1])
    x._register_post_grad_accumulation_hook(lambda acc: order.append(("post", acc.numpy().tolist())))
    x._register_post_grad_accumulation_hook(lambda acc: acc + 100)  # its result becomes .grad
    (x * 3).sum().backward()
    (x * 1).sum().backward()
    assert order == [("hook", [3.0, 3.0]), ("post", [6.0, 6.0]), ("hook", [1.0, 1.0]), ("post", [108.0, 108.0])]
    np.testing.assert_array_equal(x.grad.numpy(), [208.0, 208.0])


def test_post_accumulation_hooks_of_a_non_leaf_run_where_it_retains_its_gradient():
    # 0.9 registers them on any tensor (api/python/utils/tensor_utils.cpp:112-117); CopyOrAccGrad runs them
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    kept, dropped = x * 2, x * 3
    seen = []
    kept.retain_grad()
    kept._register_post_grad_accumulation_hook(lambda acc: seen.append(("kept", acc.numpy().tolist())))
    dropped._register_post_grad_accumulation_hook(lambda acc: seen.append(("dropped", acc.numpy().tolist())))
    (kept * 5 + dropped).sum().backward()
    assert seen == [("kept", [5.0, 5.0])]
    np.testing.assert_array_equal(x.grad.numpy(), [13.0, 13.0])


def test_a_hook_on_a_tensor_that_needs_no_gradient_is_refused():
    with pytest.raises(RuntimeError, match="^cannot register a hook on a tensor that doesn't require gradient$"):
        flow.tensor([1.0]).register_hook(lambda g: g)


@needs_torch
def test_hooks_match_torch_on_a_diamond():
    """A leaf and a non-leaf, each reached by three paths, hooks rescaling: gradients equal torch's."""
    data = np.array([0.5, -1.0, 2.0], np.float32)
    out = {}
    for lib in (flow, torch):
        x = lib.tensor(data, requires_grad=True)
        h = x * x
        h.retain_grad()
        h.register_hook(lambda g: g * 3)
        x.register_hook(lambda g: g - 1)
        loss = (h.sin() + h * x + h.exp() * 0.5).sum()
        loss.backward()
        out[lib.__name__.split("_")[0]] = (x.grad.numpy().copy() if lib is flow else x.grad.detach().numpy(),
                                           h.grad.numpy().copy() if lib is flow else h.grad.detach().numpy())
    np.testing.assert_allclose(out["oneflow"][0], out["torch"][0], rtol=1e-6)
    np.testing.assert_allclose(out["oneflow"][1], out["torch"][1], rtol=1e-6)


def test_hooks_on_global_tensors_see_the_summed_logical_gradient():
    """2 simulated ranks: a broadcast leaf reached by a split path and a broadcast path; its hook (and a non-leaf's)
    sees the whole summed gradient once on every rank, and .grad holds it in the leaf's layout."""
    w_full = np.arange(8, dtype=np.float32).reshape(4, 2)

    def body():
        p = flow.placement("cpu", [0, 1])
        x = flow.tensor(np.ones((4, 2), np.float32), placement=p, sbp=flow.sbp.broadcast, requires_grad=True)
        w = flow.tensor(w_full, placement=p, sbp=flow.sbp.split(0))
        seen = []
        x.register_hook(lambda g: seen.append(g.numpy().copy()))
        h = x * 2
        h.register_hook(lambda g: g * 10)
        ((x * w).sum() + (h * 1).sum() + (x * 3).sum()).backward()
        return seen, x.grad.numpy(), tuple(x.grad.sbp)

    for seen, grad, sbp in on_ranks(2, body):
        assert len(seen) == 1
        np.testing.assert_array_equal(seen[0], w_full + 20 + 3)
        np.testing.assert_array_equal(grad, w_full + 23)
        assert sbp == (flow.sbp.broadcast,)


# --- 4. the same on a GPU (CuPy on a GPU run, the strict fake device here): each program runs on "cpu" and "cuda" --
@pytest.fixture
def device(monkeypatch):
    import strict_device

    return strict_device.suite_gpu_or_fake(monkeypatch)


def _hooks_program(on):
    x = flow.tensor([1.0, -2.0, 3.0], device=on, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    h = x * 2
    h.retain_grad()
    h.register_hook(lambda g: g * 10)
    (h * 1 + h * x + x * 3).sum().backward()
    (gx,) = flow.autograd.grad((x * 5).sum(), x)
    return seen + [h.grad.numpy(), x.grad.numpy(), gx.numpy()]


def test_hooks_on_cuda_tensors_as_on_the_cpu(device):
    cpu, gpu = _hooks_program("cpu"), _hooks_program("cuda")
    assert len(cpu) == len(gpu) == 5  # the leaf hook: once per pass (backward, then autograd.grad)
    for a, b in zip(cpu, gpu):
        np.testing.assert_array_equal(b, a)
    x = np.array([1.0, -2.0, 3.0], np.float32)
    np.testing.assert_array_equal(cpu[2], 10 * (1 + x))  # h.grad: hooked (h * 1 + h * x)
    np.testing.assert_array_equal(cpu[3], 2 * 10 * (1 + x) + 2 * x + 3)


def test_a_kernels_strided_result_on_cuda_is_laid_out_as_on_the_cpu(device):
    def run(on):
        x = flow.tensor(A[0], device=on)
        y = x.T * 2  # the elementwise result of a transposed input: C order before its first view
        y[0].fill_(-1)
        y.narrow(1, 1, 2).mul_(3)
        return tuple(y.stride()), y.numpy().copy(), y.numpy().strides

    cpu, gpu = run("cpu"), run("cuda")
    expected = A[0].T * 2
    expected[0] = -1
    expected[:, 1:3] *= 3
    np.testing.assert_array_equal(cpu[1], expected)
    assert cpu[0] == gpu[0] == (3, 1) and cpu[2] == (12, 4)
    np.testing.assert_array_equal(gpu[1], expected)


def test_from_dlpack_of_a_strided_cuda_array_keeps_its_strides(device, monkeypatch):
    """A transposed device array handed in through DLPack (its module's `from_dlpack` stands for the capsule's
    import): a view of the device memory with the array's strides, as on the CPU."""
    base = device.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    arr = base.T

    class Capsule:
        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA

        def __dlpack__(self, stream=None):
            raise AssertionError("read through from_dlpack")

    monkeypatch.setattr(device, "from_dlpack", lambda obj: arr, raising=False)
    t = flow.from_dlpack(Capsule())
    assert t.device.type == "cuda" and tuple(t.stride()) == (1, 4) and not t.is_contiguous()
    t[1, 2] = -1.0
    row = t[2]  # a view of the same device memory
    row.fill_(7.0)
    got = flow.from_dlpack(Capsule()).numpy()
    expected = np.arange(12, dtype=np.float32).reshape(3, 4).T.copy()
    expected[1, 2] = -1.0
    expected[2] = 7.0
    np.testing.assert_array_equal(got, expected)
