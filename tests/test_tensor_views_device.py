"""Views of tensors on a GPU share their storage as views of CPU tensors do (OneFlow 0.9's view ops are device-
agnostic: `oneflow/core/framework/tensor_methods.cpp` at v0.9.0 makes the view over the input's `TensorStorage`
whatever its device). Each program runs twice, on "cpu" (numpy) and on "cuda" (CuPy on a GPU run, the strict fake
device here: `strict_device.suite_gpu_or_fake`), and the two runs must agree exactly: values read through views and
bases after in-place ops and assignments, strides, storage offsets, contiguity, gradients. The CPU side is itself
checked against numpy / torch in tests/test_tensor_views.py."""
import numpy as np
import pytest

import oneflow_compat as flow
import strict_device
from test_tensor_views import A, EXPANDS, VIEW_OPS, _kernel_ops


@pytest.fixture
def device(monkeypatch):
    return strict_device.suite_gpu_or_fake(monkeypatch)


def _is_fake(xp):
    return getattr(xp, "ndarray", None) is strict_device.StrictArray


def _same_memory(xp, a, b):
    return bool(xp.may_share_memory(a, b))


def _layout(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.is_contiguous()


def _writes_through(view, on):
    """The CPU test's program (tests/test_tensor_views.py) on device `on`: what x and the view read after each of an
    in-place op and an assignment through the view, and an in-place op and an assignment through x."""
    x = flow.tensor(A, device=on)
    y = view(x)
    seen = [("layout", _layout(y)), ("view", y.numpy().copy())]
    y.mul_(-1)
    seen.append(("x after y.mul_", x.numpy().copy()))
    y[...] = 7 if y.ndim == 0 else flow.tensor(np.full(tuple(y.shape), 7, np.float32), device=on)
    seen.append(("x after y[...] =", x.numpy().copy()))
    x.add_(1)
    seen.append(("y after x.add_", y.numpy().copy()))
    x[0, 1] = 100
    seen.append(("y after x[0, 1] =", y.numpy().copy()))
    return seen, x, y


def _assert_same(cpu, gpu):
    for (what, a), (_, b) in zip(cpu, gpu):
        if what == "layout":
            assert a == b, "layout (shape, stride, offset, contiguous): cpu %s, cuda %s" % (a, b)
        else:
            np.testing.assert_array_equal(b, a, err_msg=what)


@pytest.mark.parametrize("name, view, np_view", VIEW_OPS, ids=[o[0] for o in VIEW_OPS])
def test_a_view_of_a_cuda_tensor_shares_its_storage_as_on_the_cpu(device, name, view, np_view):
    cpu, _, _ = _writes_through(view, "cpu")
    gpu, x, y = _writes_through(view, "cuda")
    _assert_same(cpu, gpu)
    # the numpy reference of the CPU test, once more on what the device computed
    base = A.copy()
    np_view(base)[...] *= -1
    np_view(base)[...] = 7
    np.testing.assert_array_equal(gpu[3][1], base)
    root = x._view_root if x._view_root is not None else x
    assert y.device.type == "cuda" and (y is root or y._view_root is root)  # (x[:] is x without gradients)
    assert _same_memory(device, y._value.pieces[0], root._value.pieces[0])


@pytest.mark.parametrize("name, view, np_view", EXPANDS, ids=[o[0] for o in EXPANDS])
def test_an_expanded_view_of_a_cuda_tensor_reads_and_writes_its_base_as_on_the_cpu(device, name, view, np_view):
    def run(on):
        x = flow.tensor(A, device=on)
        y = view(x)
        seen = [("layout", _layout(y)), ("view", y.numpy().copy())]
        x.mul_(3)
        seen.append(("y after x.mul_", y.numpy().copy()))
        y.fill_(5)
        seen += [("x after y.fill_", x.numpy().copy()), ("y after y.fill_", y.numpy().copy())]
        return seen

    _assert_same(run("cpu"), run("cuda"))


def test_the_issues_examples_write_the_cuda_tensor(device):
    # (the calls of the task: each one silently left `a` unchanged on a GPU while views copied there)
    def run(on):
        a = flow.tensor(A[0], device=on)
        a[0].add_(1)
        a.view(4, 3).mul_(2)
        a.T[1].fill_(0)
        a.narrow(1, 2, 2).copy_(flow.tensor(np.full((3, 2), -4, np.float32), device=on))
        a[:, 0].zero_()
        return a.numpy()

    expected = A[0].copy()
    expected[0] += 1
    expected *= 2
    expected[:, 1] = 0
    expected[:, 2:4] = -4
    expected[:, 0] = 0
    np.testing.assert_array_equal(run("cpu"), expected)
    np.testing.assert_array_equal(run("cuda"), expected)


def test_making_a_view_on_the_fake_device_copies_nothing(device):
    if not _is_fake(device):
        pytest.skip("counts the fake device's launches")
    x = flow.tensor(A, device="cuda")
    strict_device.Launches.reset()
    free = [x[1], x[:, 1:3], x.view(6, 4), x.narrow(2, 1, 2), x.unsqueeze(1), x.diagonal(0, 1, 2),
            x[:, :1].expand(2, 5, 4), x.detach(), x.transpose(0, 2), x.permute(1, 2, 0), x[0].T, x.unfold(2, 2, 1)]
    assert strict_device.Launches.count == 0 and strict_device.Launches.uploads == 0, strict_device.Launches.by_name
    # (as_strided still runs its op, a gather, whose result the view replaces)
    for v in free + [x.as_strided((3, 2), (2, 5), 1)]:
        assert _same_memory(device, v._value.pieces[0], x._value.pieces[0])


def test_a_reshape_that_needs_a_copy_and_contiguous_give_cuda_tensors_of_their_own(device):
    def run(on):
        x = flow.tensor(A, device=on)
        t = x.transpose(0, 1)
        r = t.reshape(-1)  # (no strides express it: a copy, as on the CPU)
        c = t.contiguous()
        r.fill_(1)
        c.fill_(2)
        d = x.permute(2, 1, 0)
        assert flow._C.contiguous_(d) is d
        d.fill_(3)
        return [_layout(r), _layout(c), _layout(d), x.numpy()]

    cpu, gpu = run("cpu"), run("cuda")
    assert cpu[:3] == gpu[:3]
    np.testing.assert_array_equal(gpu[3], A)
    np.testing.assert_array_equal(cpu[3], A)


def test_reading_a_non_contiguous_cuda_view_back_gives_its_values(device):
    x = flow.tensor(A, device="cuda")
    v = x.permute(2, 0, 1)[1:, :, ::2]
    expected = A.transpose(2, 0, 1)[1:, :, ::2]
    assert not v.is_contiguous()
    np.testing.assert_array_equal(v.numpy(), expected)
    host = v.to("cpu")
    np.testing.assert_array_equal(host.numpy(), expected)
    assert host.is_contiguous()
    placement = flow.placement("cuda", ranks=[0])
    g = v.to_global(placement=placement, sbp=flow.sbp.broadcast)
    np.testing.assert_array_equal(g.to_local().numpy(), expected)
    np.testing.assert_array_equal(g.numpy(), expected)
    # OneFlow 0.9's LocalToGlobal (functional/impl/global_cast.cpp) copies only to another device or with
    # copy=True: the global's local piece is the view, so a write into it reaches the base (as on the CPU)
    g.to_local().fill_(0)
    zeroed = A.copy()
    zeroed.transpose(2, 0, 1)[1:, :, ::2] = 0
    np.testing.assert_array_equal(x.numpy(), zeroed)
    np.testing.assert_array_equal(v.numpy(), np.zeros_like(expected))
    x.copy_(flow.tensor(A, device="cuda"))
    # an op on the non-contiguous view reads the view's values (the kernels get a strided device array)
    np.testing.assert_allclose((v * 2 + 1).sum(dim=1).numpy(), (expected * 2 + 1).sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(flow.matmul(v[0], v[1].T).numpy(), expected[0] @ expected[1].T, rtol=1e-6)


# --- autograd through views of cuda tensors: the same programs as tests/test_tensor_views.py's, cpu against cuda --
W = np.random.default_rng(0).standard_normal((3, 4))


def _inplace_on_a_view(T):
    w = T(W, requires_grad=True)
    x = w * 2
    y = x[1]
    y.mul_(3)
    z = x.T
    ((x * x).sum() + (y * 5).sum() + z[0].sum()).backward()
    return [w.grad, x, y, z]


def _views_follow_their_base(T):
    w = T(W, requires_grad=True)
    x = w * 2
    v = x[:, 1]
    u = x.view(12)[3:7]
    x.mul_(w)
    ((v * v).sum() + (u * 3).sum()).backward()
    return [w.grad, v, u]


def _overlapping_views(T):
    w = T(W, requires_grad=True)
    x = w * 3
    a = x[0:2]
    b = x[1:3, 1:]
    a.add_(w[0:2] ** 2)
    b.mul_(2)
    c = b.T[0]
    c.sub_(1)
    ((x ** 2).sum() + (a * b[:1, :1].sum()).sum()).backward()
    return [w.grad, x, a, b, c]


def _base_without_gradient(T):
    x = T(np.zeros((3, 4)))
    w = T(W[0], requires_grad=True)
    x[1].add_(w)
    assert x.requires_grad and not x.is_leaf
    (x * x).sum().backward()
    return [w.grad, x]


def _expanded_view_remade(T):
    # an expanded view (stride 0) re-made after an in-place op on its base: its gradient sums the repeats
    w = T(W, requires_grad=True)
    x = w + 1
    e = x[:, :1].expand(3, 5)
    f = x.unfold(1, 2, 1)
    x.mul_(w)
    ((e * T(np.arange(15.0).reshape(3, 5))).sum() + (f ** 2).sum()).backward()
    return [w.grad, e, f]


def _detached_view(T):
    w = T(W, requires_grad=True)
    x = w * 2
    d = x.detach()[0]
    d.add_(w[0])
    (x * x).sum().backward()
    return [w.grad, x, d]


def _every_view_op(T):
    w = T(W.reshape(3, 4), requires_grad=True)
    outs = [w.view(12), w.reshape(2, 6), w[1], w[:, 1:3], w.T, w.narrow(1, 1, 2), w.unsqueeze(0), w.diagonal(),
            w.as_strided((2, 2), (1, 4), 1), w.unfold(1, 2, 2), w.chunk(2, 1)[1], w[:1].expand(3, 4)]
    loss = sum(((o * o).sum() * (k + 1) for k, o in enumerate(outs)), w.sum() * 0)
    loss.backward()
    return [w.grad]


def _second_derivative(T):
    w = T(np.arange(4.0), requires_grad=True)
    g, = flow.autograd.grad((w * 2).view(2, 2).T.sum() ** 2, w, create_graph=True)
    g.sum().backward()
    return [g, w.grad]


PROGRAMS = [_inplace_on_a_view, _views_follow_their_base, _overlapping_views, _base_without_gradient,
            _expanded_view_remade, _detached_view, _every_view_op, _second_derivative]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__.strip("_") for p in PROGRAMS])
def test_gradients_through_views_of_cuda_tensors_are_the_cpus(device, program):
    cpu = program(lambda a, **kw: flow.tensor(a, device="cpu", **kw))
    gpu = program(lambda a, **kw: flow.tensor(a, device="cuda", **kw))
    for k, (a, b) in enumerate(zip(cpu, gpu)):
        assert b.device.type == "cuda"
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-12, atol=0,
                                   err_msg="result %d" % k)


def test_an_inplace_op_on_a_view_of_a_cuda_leaf_is_refused_as_on_the_cpu(device):
    w = flow.tensor(W, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^a view of a leaf Variable that requires grad is being used in an "
                                           r"in-place operation\.$"):
        w[0].add_(1)
    with flow.no_grad():
        w[0].add_(1)  # (without gradients: the leaf's storage is written, as on the CPU)
    expected = W.copy()
    expected[0] += 1
    np.testing.assert_array_equal(w.numpy(), expected)


def test_an_optimizer_step_on_a_cuda_parameter_is_seen_through_its_views(device):
    lin = flow.nn.Linear(4, 3).to("cuda")
    wt = lin.weight.T
    first_row = lin.weight.data[0]
    x = flow.tensor(np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32), device="cuda")
    ((lin(x) ** 2).sum() + wt.sum()).backward()
    flow.optim.SGD(lin.parameters(), lr=0.1).step()
    w = lin.weight.numpy()
    np.testing.assert_array_equal(wt.numpy(), w.T)
    np.testing.assert_array_equal(first_row.numpy(), w[0])


# --- the fake device's arrays are CuPy's in what views need ---------------------------------------------------------
def test_the_fake_devices_as_strided_is_cupys():
    fake = strict_device.module()
    a = fake.arange(12, dtype=np.float32)
    v = fake.lib.stride_tricks.as_strided(a[2:], (2, 3), (16, 4))  # a view: writes reach a
    v[...] = -1
    np.testing.assert_array_equal(a.get(), [0, 1, -1, -1, -1, 5, -1, -1, -1, 9, 10, 11])
    with pytest.raises(TypeError):
        fake.lib.stride_tricks.as_strided(a, (3,), (4,), writeable=False)  # numpy's keyword: not CuPy's
    with pytest.raises(TypeError, match="host array"):
        fake.lib.stride_tricks.as_strided(np.arange(3.0), (3,), (8,))
    with pytest.raises(AttributeError, match="no attribute 'broadcast_to'"):
        fake.lib.stride_tricks.broadcast_to  # noqa: B018 (numpy's stride_tricks has it, CuPy's does not)
    for name in ("ctypes", "setflags", "resize"):
        with pytest.raises(AttributeError, match="'cupy.ndarray' object has no attribute '%s'" % name):
            getattr(a, name)


# --- every kernel on strided device arrays (what views of cuda tensors hand them now) -------------------------------
def _device_strided_copy(xp, a):
    """`a`'s values (host) in a non-contiguous device array (every other element of a wider one), as a view is."""
    if a.ndim == 0 or a.size < 2:
        return xp.asarray(a)
    wide = xp.zeros(a.shape[:-1] + (a.shape[-1] * 2,), a.dtype)
    view = wide[..., ::2]
    view[...] = xp.asarray(a)
    return view


def _host(v):
    return v.get() if hasattr(v, "get") and not isinstance(v, np.ndarray) else np.asarray(v)


@pytest.mark.parametrize("op_type", _kernel_ops())
def test_every_kernel_reads_strided_device_inputs_as_their_contiguous_copies_and_writes_none(monkeypatch, op_type):
    # on each example row, the kernel's outputs on strided device copies of the inputs are those on contiguous
    # device ones (a raw CUDA kernel reads its arrays as C-contiguous: one given a view must be given its copy)
    from oneflow_compat.ir import sbp as S
    from oneflow_compat.ops import examples
    from oneflow_compat.runtime import plan
    from oneflow_compat.tools import validate

    xp = strict_device.suite_gpu_or_fake(monkeypatch, allow_syncs=True)
    for k, row in enumerate(examples.EXAMPLES[op_type]):
        arrays = [np.asarray(a) for a in row.make(np.random.default_rng(k))]
        if any(a.dtype == object for a in arrays):
            continue
        op = validate.build_op(op_type, arrays, row.attrs, 1)
        op.sbp_in, op.sbp_out = [S.B] * len(arrays), [S.B] * len(op.outputs)
        fn = plan.device_fn(op, plan.DeviceSlot(op, 0, xp, validate._validation_session()))
        try:
            ref = fn(*[xp.asarray(a) for a in arrays])
        except Exception:  # noqa: BLE001 (a row the device does not run with contiguous inputs: not a views matter)
            continue
        strided = [_device_strided_copy(xp, a) for a in arrays]
        out = fn(*strided)
        for a, s in zip(arrays, strided):
            np.testing.assert_array_equal(_host(s), a, err_msg="%s row %d wrote its input" % (op_type, k))
        refs, outs = (ref, out) if len(op.outputs) > 1 else ((ref,), (out,))
        for r, o in zip(refs, outs):
            if hasattr(r, "dtype") and r.dtype != object:
                # (equal on the fake; on a GPU a library may sum a strided operand in another order: float32's
                # and float16's last bits may differ, a wrong read would not be close)
                rtol = {2: 1e-3, 4: 1e-5}.get(np.dtype(r.dtype).itemsize, 1e-9) if r.dtype.kind in "fc" else 0
                np.testing.assert_allclose(_host(o), _host(r), rtol=rtol, atol=rtol * 1e-3,
                                           err_msg="%s row %d (%s)" % (op_type, k, row.note))
