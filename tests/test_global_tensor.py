"""The global-tensor API in one process (a world of one rank): placements, SBP symbols, tensors and their printing,
creation, eager ops against numpy, autograd, random numbers, and the names the legacy API shares.
Multi-rank behaviour is in test_global_mpi.py."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat.runtime import global_eager


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


# --- placement and sbp ---------------------------------------------------------------------------------------------
def test_placement_spellings_attributes_and_repr():
    a = flow.placement(type="cuda", ranks=[0, 1])
    b = flow.placement("cuda", [0, 1])
    c = flow.placement("cuda", {0: [0, 1]})  # OneFlow 0.5: node 0, local devices 0 and 1
    d = flow.placement(device_type="cuda", ranks=[1, 0])
    assert a == b == c == d and hash(a) == hash(b) == hash(c) == hash(d)
    assert a != flow.placement("cpu", [0, 1]) and a != flow.placement("cuda", [0])
    assert repr(a) == 'oneflow.placement(type="cuda", ranks=[0, 1])'
    assert a.type == a.device_type == "cuda" and a.ranks.tolist() == [0, 1]
    assert repr(a.hierarchy) == "oneflow.Size([2])"
    nd = flow.placement("cpu", [[0, 1], [2, 3]])
    assert repr(nd) == 'oneflow.placement(type="cpu", ranks=[[0, 1], [2, 3]])' and tuple(nd.hierarchy) == (2, 2)
    assert flow.placement("cpu", {0: [0]}) == flow.placement("cpu", [0])
    assert flow.placement("cpu", 0).ranks.tolist() == [0]
    with pytest.raises(ValueError, match='type must be "cpu" or "cuda"'):
        flow.placement("tpu", [0])


def test_a_rank_outside_the_world_is_refused_when_a_tensor_is_made():
    p = flow.placement("cuda", [0, 1])
    with pytest.raises(RuntimeError, match="Placement is invalid because rank must be less than world size!"):
        flow.randn(4, 5, placement=p, sbp=flow.sbp.split(dim=0))
    with pytest.raises(RuntimeError, match="Placement is invalid because rank must be less than world size!"):
        flow.randn(4, 5).to_global(placement=p, sbp=flow.sbp.broadcast)


def test_sbp_symbols():
    s = flow.sbp
    assert repr(s.split(dim=0)) == "oneflow.sbp.split(dim=0)" and repr(s.split(1)) == "oneflow.sbp.split(dim=1)"
    assert s.split(0) is s.split(dim=0) is s.split(axis=0)
    assert repr(s.broadcast) == "oneflow.sbp.broadcast" and repr(s.partial_sum) == "oneflow.sbp.partial_sum"
    assert s.broadcast() is s.broadcast and s.partial_sum() is s.partial_sum
    assert isinstance(s.broadcast, s.sbp) and s.split(0) != s.split(1)
    p = flow.placement("cpu", [0])
    assert flow.zeros(2, 3, placement=p, sbp=[s.broadcast]).sbp == (s.broadcast,)
    # one symbol per placement dimension: two on a line are refused, naming both (as OneFlow's placed_nd_sbp check)
    with pytest.raises(ValueError, match=r"2 sbp symbols \(oneflow.sbp.broadcast, oneflow.sbp.split\(dim=0\)\) for "
                                         r"placement .* with 1 dimension"):
        flow.zeros(2, 3, placement=p, sbp=[s.broadcast, s.split(0)])
    mesh = flow.placement("cpu", [[0]])  # a 1 x 1 mesh: 2-D SBP
    t = flow.ones(2, 3, placement=mesh, sbp=(s.broadcast, s.split(0)))
    assert t.sbp == (s.broadcast, s.split(0)) and t.numpy().tolist() == [[1.0] * 3] * 2
    with pytest.raises(ValueError, match="1 sbp symbol .* with 2 dimensions"):
        flow.ones(2, 3, placement=mesh, sbp=s.broadcast)


def test_size_and_dtype_reprs():
    assert repr(flow.Size([4, 5])) == "oneflow.Size([4, 5])" and flow.Size([4, 5]) == (4, 5)
    assert repr(flow.float32) == "oneflow.float32" and repr(flow.int64) == "oneflow.int64"
    assert repr(flow.bool) == "oneflow.bool"
    assert flow.randn(4, 5).shape == flow.Size([4, 5]) and repr(flow.randn(4, 5).shape) == "oneflow.Size([4, 5])"


# --- tensors -----------------------------------------------------------------------------------------------------
def test_creation_dtypes_and_values():
    assert flow.tensor([1, 2]).dtype is flow.int64 and flow.tensor([1.0, 2]).dtype is flow.float32
    assert flow.tensor(np.zeros(3)).dtype is flow.float64 and flow.tensor([True]).dtype is flow.bool
    assert flow.Tensor([1, 2]).dtype is flow.float32 and flow.Tensor(2, 3).shape == (2, 3)
    assert flow.tensor([1, 2], dtype=flow.float32).dtype is flow.float32
    np.testing.assert_array_equal(flow.ones(2, 3).numpy(), np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(flow.zeros((2, 3), dtype=flow.int32).numpy(), np.zeros((2, 3), np.int32))
    np.testing.assert_array_equal(flow.arange(5).numpy(), np.arange(5))
    assert flow.arange(0, 1, 0.25).dtype is flow.float32
    r = flow.randint(0, 10, (100,))
    assert r.dtype is flow.int64 and 0 <= r.numpy().min() and r.numpy().max() < 10
    u = flow.rand(1000).numpy()
    assert u.dtype == np.float32 and 0 <= u.min() and u.max() < 1
    t = flow.tensor([[1.0, 2.0]], requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.is_local and not t.is_global and not t.is_consistent
    assert t.ndim == 2 and t.dim() == 2 and t.numel() == 2 and t.size() == (1, 2) and t.size(1) == 2
    assert flow.tensor(3.5).shape == () and flow.tensor(3.5).item() == 3.5
    assert flow.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]


def test_repr_as_oneflow_prints():
    assert repr(flow.tensor([[1.0, 2.5], [3.0, -4.0]])) == (
        "tensor([[ 1.0000,  2.5000],\n        [ 3.0000, -4.0000]], dtype=oneflow.float32)")
    assert repr(flow.tensor([1, 2, 3])) == "tensor([1, 2, 3], dtype=oneflow.int64)"
    assert repr(flow.tensor([1.0, 2.0])) == "tensor([1., 2.], dtype=oneflow.float32)"
    assert repr(flow.tensor(3.5)) == "tensor(3.5000, dtype=oneflow.float32)"
    assert repr(flow.tensor([1e-5, 1e3])) == "tensor([1.0000e-05, 1.0000e+03], dtype=oneflow.float32)"
    assert repr(flow.zeros(0)) == "tensor([], dtype=oneflow.float32)"
    assert repr(flow.tensor([1.0], requires_grad=True)) == "tensor([1.], dtype=oneflow.float32, requires_grad=True)"
    big = repr(flow.zeros(2000))
    assert big.startswith("tensor([0., 0., 0.,  ..., 0., 0., 0.]")
    g = flow.tensor([[1.0, 2.0]]).to_global(placement=flow.placement("cuda", [0]), sbp=flow.sbp.split(0))
    assert repr(g) == ('tensor([[1., 2.]], placement=oneflow.placement(type="cuda", ranks=[0]),\n'
                       '       sbp=(oneflow.sbp.split(dim=0),), dtype=oneflow.float32)')
    loss = flow.tensor(0.25)
    assert f"loss: {loss:>7f}" == "loss: 0.250000"


def test_to_local_to_global_on_one_rank():
    p = flow.placement("cpu", [0])
    x = flow.tensor([[1.0, 2.0], [3.0, 4.0]])
    g = x.to_global(placement=p, sbp=flow.sbp.split(0))
    assert g.is_global and g.is_consistent and g.placement == p and g.sbp == (flow.sbp.split(dim=0),)
    np.testing.assert_array_equal(g.to_local().numpy(), x.numpy())
    assert g.to_local().is_local
    assert g.to_consistent(p, flow.sbp.split(0)) is g
    b = g.to_global(sbp=flow.sbp.broadcast)
    assert b.sbp == (flow.sbp.broadcast,)
    with pytest.raises(RuntimeError, match="Expected global tensor for to_local but got local tensor!"):
        x.to_local()
    with pytest.raises(ValueError, match="needs both placement and sbp"):
        x.to_global(placement=p)
    with pytest.raises(RuntimeError, match="Only global tensors have sbp"):
        x.sbp


# --- ops ---------------------------------------------------------------------------------------------------------
@pytest.fixture(params=["local", "global"])
def lay(request):
    """Makes tensors local, or global on the one-rank placement."""
    if request.param == "local":
        return lambda a, **kw: flow.tensor(a, **kw)
    p = flow.placement("cpu", [0])
    return lambda a, **kw: flow.tensor(a, placement=p, sbp=flow.sbp.broadcast, **kw)


def test_elementwise_and_reductions_match_numpy(lay):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4,)).astype(np.float32)
    x, y = lay(a), lay(b)
    close = np.testing.assert_allclose
    close((x + y).numpy(), a + b, rtol=1e-6)
    close((x - y).numpy(), a - b, rtol=1e-6)
    close((x * y).numpy(), a * b, rtol=1e-6)
    close((x / (y * y + 1)).numpy(), a / (b * b + 1), rtol=1e-6)
    close((2 - x).numpy(), 2 - a, rtol=1e-6)
    close((1 / (x * x + 1)).numpy(), 1 / (a * a + 1), rtol=1e-6)
    close((x ** 2).numpy(), a ** 2, rtol=1e-6)
    close((-x).numpy(), -a)
    close(flow.exp(x).numpy(), np.exp(a), rtol=1e-6)
    close(flow.log(x.abs() + 1).numpy(), np.log(np.abs(a) + 1), rtol=1e-6)
    close(x.sum().numpy(), a.sum(), rtol=1e-5)
    assert x.sum().shape == () and x.sum(1).shape == (3,) and x.sum(1, keepdim=True).shape == (3, 1)
    close(flow.sum(x, dim=0).numpy(), a.sum(0), rtol=1e-5)
    close(x.mean(dim=1, keepdim=True).numpy(), a.mean(1, keepdims=True), rtol=1e-5)
    values, indices = flow.max(x, dim=1)
    close(values.numpy(), a.max(1))
    np.testing.assert_array_equal(indices.numpy(), a.argmax(1))
    assert x.argmax().item() == a.argmax() and x.argmax(0).dtype is flow.int64
    close(x.max().numpy(), a.max())
    close(flow.softmax(x, dim=1).numpy(), np_softmax(a, 1), rtol=1e-5)
    close(x.log_softmax(1).numpy(), np.log(np_softmax(a, 1)), rtol=1e-5)
    close(flow.relu(x).numpy(), np.maximum(a, 0))
    assert (x > 0).dtype is flow.bool
    np.testing.assert_array_equal((x > 0).numpy(), a > 0)
    assert (x > 0).sum().item() == (a > 0).sum()
    ints = lay(np.array([1, 2, 3]))
    assert (ints + 1).dtype is flow.int64 and (ints + 0.5).dtype is flow.float32
    close((ints / 2).numpy(), np.array([0.5, 1.0, 1.5], np.float32))


def test_matmul_and_shapes_match_numpy(lay):
    rng = np.random.default_rng(1)
    a, w = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((5, 8)).astype(np.float32)
    x, y = lay(a), lay(w)
    close = np.testing.assert_allclose
    close(flow.matmul(x, y).numpy(), a @ w, rtol=1e-5)
    close((x @ y).numpy(), a @ w, rtol=1e-5)
    b3 = rng.standard_normal((2, 4, 5)).astype(np.float32)
    close(flow.matmul(lay(b3), y).numpy(), b3 @ w, rtol=1e-5)
    close(flow.reshape(x, (2, 10)).numpy(), a.reshape(2, 10))
    close(x.view(-1).numpy(), a.reshape(-1))
    close(flow.flatten(lay(b3), 1).numpy(), b3.reshape(2, 20))
    close(flow.transpose(x, 0, 1).numpy(), a.T)
    close(x.T.numpy(), a.T)
    close(lay(b3).permute(2, 0, 1).numpy(), b3.transpose(2, 0, 1))
    close(flow.cat([x, x], dim=1).numpy(), np.concatenate([a, a], 1))
    close(flow.stack([x, x]).numpy(), np.stack([a, a]))
    close(x.unsqueeze(1).numpy(), a[:, None])
    close(flow.squeeze(x.unsqueeze(0)).numpy(), a)
    close(x[1:3, ::2].numpy(), a[1:3, ::2])
    close(x[-1].numpy(), a[-1])
    close(x[..., 2].numpy(), a[..., 2])
    idx = np.array([[0, 4], [1, 1], [2, 3], [4, 0]])
    close(flow.gather(x, 1, lay(idx)).numpy(), np.take_along_axis(a, idx, 1))
    close(flow.where(x > 0, x, 0.0).numpy(), np.where(a > 0, a, 0))


def test_cross_entropy_and_losses(lay):
    rng = np.random.default_rng(2)
    logits, labels = rng.standard_normal((6, 4)).astype(np.float32), rng.integers(0, 4, 6)
    x, y = lay(logits), lay(labels)
    logp = np.log(np_softmax(logits, 1))
    ce = flow.nn.functional.cross_entropy(x, y)
    assert ce.shape == ()
    np.testing.assert_allclose(ce.numpy(), -logp[np.arange(6), labels].mean(), rtol=1e-5)
    np.testing.assert_allclose(flow.nn.functional.cross_entropy(x, y, reduction="sum").numpy(),
                               -logp[np.arange(6), labels].sum(), rtol=1e-5)
    target = rng.standard_normal((6, 4)).astype(np.float32)
    np.testing.assert_allclose(flow.nn.functional.mse_loss(x, lay(target)).numpy(),
                               ((logits - target) ** 2).mean(), rtol=1e-5)


# --- autograd ----------------------------------------------------------------------------------------------------
def test_gradients_of_a_small_mlp_match_the_formula(lay):
    rng = np.random.default_rng(3)
    xa, w1a, w2a = (rng.standard_normal(s).astype(np.float32) for s in [(5, 3), (3, 6), (6, 2)])
    labels = rng.integers(0, 2, 5)
    w1, w2 = lay(w1a, requires_grad=True), lay(w2a, requires_grad=True)
    h = flow.relu(flow.matmul(lay(xa), w1))
    loss = flow.nn.functional.cross_entropy(flow.matmul(h, w2), lay(labels))
    loss.backward()
    ha = np.maximum(xa @ w1a, 0)
    dlogits = np_softmax(ha @ w2a, 1)
    dlogits[np.arange(5), labels] -= 1
    dlogits /= 5
    np.testing.assert_allclose(w2.grad.numpy(), ha.T @ dlogits, rtol=1e-5, atol=1e-7)
    dh = (dlogits @ w2a.T) * (ha > 0)
    np.testing.assert_allclose(w1.grad.numpy(), xa.T @ dh, rtol=1e-5, atol=1e-7)
    assert not loss.is_leaf and "grad_fn=<" in repr(loss)


def test_gradients_accumulate_and_grad_modes():
    x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 7.0, 9.0])
    x.grad.zero_()
    with flow.no_grad():
        y = x * 2
    assert not y.requires_grad and y.grad_fn is None
    assert not (x.detach() * 2).requires_grad

    @flow.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad and (x * 2).requires_grad
    z = (x * 2).sum()
    z.backward(retain_graph=True)
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0, 4.0])
    with pytest.raises(RuntimeError, match="Grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="only Tensors of floating point can require gradients"):
        flow.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf Tensor that requires grad"):
        x += 1
    with flow.no_grad():
        storage = x._value.pieces[0]
        x -= 1
    assert x._value.pieces[0] is storage  # an update in place, as optimizers need
    np.testing.assert_allclose(x.numpy(), [0.0, 1.0, 2.0])


def test_gradient_through_to_global_and_to_local():
    p = flow.placement("cpu", [0])
    x = flow.tensor([[1.0, 2.0]], requires_grad=True)
    g = x.to_global(placement=p, sbp=flow.sbp.split(0))
    (g * 3).to_local().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[3.0, 3.0]])


# --- random numbers ----------------------------------------------------------------------------------------------
def test_random_numbers_do_not_depend_on_the_layout():
    p = flow.placement("cuda", [0])
    values = []
    for make in [lambda: flow.randn(5, 7), lambda: flow.randn(5, 7, placement=p, sbp=flow.sbp.split(1)),
                 lambda: flow.randn(5, 7, placement=p, sbp=flow.sbp.broadcast)]:
        flow.manual_seed(7)
        values.append(make().numpy())
    for v in values[1:]:
        np.testing.assert_array_equal(v, values[0])
    flow.manual_seed(7)
    a, b = flow.randn(5, 7).numpy(), flow.randn(5, 7).numpy()
    assert not np.array_equal(a, b)  # each draw advances the generator
    np.testing.assert_array_equal(a, values[0])


# --- names shared with the legacy API ------------------------------------------------------------------------------
def test_shared_names_dispatch_on_their_arguments():
    x = flow.tensor([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(flow.matmul(x, x).numpy(), x.numpy() @ x.numpy())
    np.testing.assert_allclose(flow.reshape(x, (4,)).numpy(), [1, 2, 3, 4])
    assert isinstance(flow.zeros(2, 3), flow.Tensor) and isinstance(flow.ones(2), flow.Tensor)
    np.testing.assert_allclose(flow.concat([x, x], dim=0).numpy(), np.concatenate([x.numpy()] * 2))
    assert flow.cast(x, flow.int64).dtype is flow.int64


def test_shared_names_in_a_legacy_job_take_the_legacy_ops():
    # a separate test: one process runs one of the two APIs (framework/client_mode.py; conftest resets it)
    import oneflow_compat.typing as tp

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((2, 2))) -> tp.Numpy:
        return flow.matmul(flow.reshape(a, (2, 2)), a) + flow.zeros((2, 2)) + flow.ones((2, 2))

    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    np.testing.assert_allclose(job(a), a @ a + 1)


def test_eager_plans_are_cached():
    x = flow.randn(3, 4)
    flow.relu(x)
    before = global_eager.cache_info()["entries"]
    for _ in range(5):
        flow.relu(x)
    assert global_eager.cache_info()["entries"] == before


def test_indexing_a_local_tensor_sample_by_sample_compiles_no_plan_per_index():
    # a dataset indexed sample by sample (flowvision's `self.data[index]`): the bounds are no plan's attrs
    a = np.arange(5 * 3 * 4, dtype=np.float32).reshape(5, 3, 4)
    x = flow.tensor(a)
    x[0]
    before = global_eager.cache_info()["entries"]
    for key in [1, -1, 4, (2, 1), (slice(1, 4, 2), 2), (Ellipsis, 3), (3, None, slice(None), 0)]:
        out = x[key]
        assert out.dtype == flow.float32 and not out.is_global and out.device == x.device
        np.testing.assert_array_equal(out.numpy(), a[key])
    assert global_eager.cache_info()["entries"] == before
    out = x[2]  # a view, as in OneFlow 0.9 (views team): writing into it writes the tensor
    out[...] = 0
    expected = a.copy()
    expected[2] = 0
    np.testing.assert_array_equal(x.numpy(), expected)
    labels = flow.tensor(np.array([3, 1, 4], np.int64))
    assert [int(labels[i]) for i in range(3)] == [3, 1, 4] and labels[1].dtype == flow.int64
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 5"):
        x[5]
    # a tensor that wants its gradient still goes through the op, which records it
    w = flow.tensor(a, requires_grad=True)
    w[1, 2].sum().backward()
    expected = np.zeros_like(a)
    expected[1, 2] = 1
    np.testing.assert_array_equal(w.grad.numpy(), expected)


def test_global_view_maps_nested_state_and_warns_on_other_leaves():
    view = flow.utils.global_view
    one = flow.placement("cpu", [0])
    state = {"m": {"w": flow.tensor(np.ones((2, 2), np.float32))}, "steps": 3}
    with pytest.warns(UserWarning, match=r"^Non-Tensor type: <class 'int'> encountered, it will remain the same.$"):
        out = view.to_global(state, placement=one, sbp=lambda s, t: flow.sbp.split(1))
    assert out["steps"] == 3 and out["m"]["w"].is_global and out["m"]["w"].sbp == (flow.sbp.split(1),)
    with pytest.warns(UserWarning, match="Non-Tensor type: <class 'str'>"):
        assert view.to_global("x", placement=one, sbp=flow.sbp.broadcast) == "x"
    assert view.to_global(None, placement=one, sbp=flow.sbp.broadcast) is None
    with pytest.raises(AssertionError, match="^Tensor\\(s\\) in the input must be all local or all global.$"):
        view.to_global([out["m"]["w"], flow.ones(2)], placement=one, sbp=flow.sbp.broadcast)
    back = view.to_local((out["m"]["w"],))
    assert isinstance(back, tuple) and not back[0].is_global
    np.testing.assert_array_equal(back[0].numpy(), np.ones((2, 2), np.float32))
    with pytest.warns(UserWarning, match="^The tensor should be global, local tensor will remain the same.$"):
        assert view.to_local(back[0]) is back[0]


def test_global_mode_makes_the_source_ops_global():
    from oneflow.utils.global_view import current_global_mode, global_mode

    P, B, S0 = flow.placement("cpu", [0]), flow.sbp.broadcast, flow.sbp.split(0)
    assert not current_global_mode().is_enabled
    with global_mode(True, placement=P, sbp=S0):
        mode = current_global_mode()
        assert mode.is_enabled and mode.placement == P and mode.sbp == (S0,)
        made = [flow.randn(4, 3), flow.rand(4), flow.randint(0, 5, (4,)), flow.randperm(4), flow.zeros(4),
                flow.ones(4, 2), flow.full((4,), 7), flow.empty(4), flow.arange(4), flow.tensor([1.0, 2.0])]
        for t in made:
            assert t.is_global and t.placement == P and t.sbp == (S0,), t
        assert flow.zeros(2, device="cuda").placement == flow.placement("cuda", [0])  # the device's type
        assert not flow.normal(0, 1, (2,)).is_global  # (not one of OneFlow's global-mode sources)
        x = made[0]
        assert x.device == flow.device("cpu") and x.to(flow.device("cpu")) is x
        np.testing.assert_array_equal(flow.arange(4).numpy(), np.arange(4))
        with global_mode(False):
            assert not flow.ones(2).is_global and not current_global_mode().is_enabled
            local = flow.ones(3)
        assert flow.ones(2).is_global
        # what the framework makes for local work stays local: a local op's constants and index tensors, a move
        for t in (local + 1, local * 2.5, local[[0, 2]], local.to("cpu"), local.to(flow.float64)):
            assert not t.is_global, t
        assert not flow.get_rng_state().is_global
    assert not flow.ones(2).is_global and not current_global_mode().is_enabled
    with pytest.raises(AssertionError, match="^Both placement and sbp are required if the global mode is enabled.$"):
        global_mode(True, placement=P)
    g = flow.ones(2, placement=P, sbp=B)
    assert g.to("cuda").placement == flow.placement("cuda", [0]) and g.to("cuda").sbp == (B,)
    with pytest.raises(RuntimeError, match=r'^Only string device without device id \(eg. "cpu" or "cuda"\) is '
                                           r"expected for global tensor, but got cuda:0$"):
        g.to("cuda:0")
    with pytest.raises(RuntimeError, match="^Only local tensors have 'device'"):
        g.device


def test_global_mode_in_a_graph_as_oneflows_example():
    from oneflow.utils.global_view import global_mode

    P, B = flow.placement("cpu", [0]), flow.sbp.broadcast
    linear = flow.nn.Linear(3, 2).to_global(placement=P, sbp=B)

    class Eval(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.linear = linear

        def build(self, x):
            with global_mode(True, placement=P, sbp=B):
                device = self.linear.weight.device
                x = x.to(device)
                out = self.linear(x)
                sample = flow.randn(out.shape, device="cpu").to(device)
                out = out + sample * 100
                return out - sample * 100

    x = flow.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), placement=P, sbp=B)
    np.testing.assert_allclose(Eval()(x).numpy(), linear(x).numpy(), rtol=1e-5, atol=1e-4)


def test_explain_lists_no_boxing_on_one_rank():
    flow.relu(flow.randn(2, 2, placement=flow.placement("cpu", [0]), sbp=flow.sbp.split(0)))
    report = flow.explain()
    assert str(report).startswith("eager global ops:") and report.total_bytes() == 0
