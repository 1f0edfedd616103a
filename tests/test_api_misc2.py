"""api-misc2: OneFlow 0.9's names beyond the reference pages — nn.FusedMLP, nn.DistributedPariticalFCSample /
flow.distributed_partial_fc_sample, nn.AllReduce / _C.local_all_reduce, nn.RNNBase / RNNCellBase, the Ofrecord
aliases, autograd.graph.saved_tensors_hooks, flow.asyncs, nn.Graph.trace — and the docstring-example fixes
(tensor_buffer_to_tensor on 2-D buffers, container and ParamGroup printing, register_hook's None, nn.init.eye_,
WarmUpLR, how a graph prints a module). References: numpy written here, torch where installed."""
import threading
import warnings

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn
from simulated_ranks import on_ranks

RNG = np.random.RandomState(7)


# --- nn.FusedMLP --------------------------------------------------------------------------------------------------
def _mlp_reference(x, ws, bs, skip_final):
    """numpy: relu(x wᵀ + b) per layer, the last relu left out when skip_final; and the input gradient of sum()."""
    acts, h = [], x
    for i, (w, b) in enumerate(zip(ws, bs)):
        z = h @ w.T + b
        last = i == len(ws) - 1
        h = z if (last and skip_final) else np.maximum(z, 0)
        acts.append((z, not (last and skip_final)))
    g = np.ones_like(h)
    grads_w = [None] * len(ws)
    hs = [x] + [a for a in _outputs(x, ws, bs, skip_final)[:-1]]
    for i in range(len(ws) - 1, -1, -1):
        z, relu = acts[i]
        if relu:
            g = g * (z > 0)
        grads_w[i] = g.T @ hs[i]
        g = g @ ws[i]
    return h, g, grads_w


def _outputs(x, ws, bs, skip_final):
    out, h = [], x
    for i, (w, b) in enumerate(zip(ws, bs)):
        z = h @ w.T + b
        h = z if (i == len(ws) - 1 and skip_final) else np.maximum(z, 0)
        out.append(h)
    return out


def test_fused_mlp_parameters_initialisation_and_repr_are_oneflows():
    flow.manual_seed(3)
    m = nn.FusedMLP(4, [5, 6], 3)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == [
        ("weight_0", (5, 4)), ("bias_0", (5,)), ("weight_1", (6, 5)), ("bias_1", (6,)), ("weight_2", (3, 6)),
        ("bias_2", (3,))]
    assert m.weights()[1] is m.weight_1 and m.bias(2) is m.bias_2 and len(m.biases()) == 3
    assert repr(m) == "FusedMLP(in_features=4, hidden_features=[5, 6], out_features=3, skip_final_activation=False)"
    # nn.Linear's initialisation layer by layer, in the same draw order: the same numbers as a Linear stack
    flow.manual_seed(3)
    stack = [nn.Linear(4, 5), nn.Linear(5, 6), nn.Linear(6, 3)]
    for i, lin in enumerate(stack):
        np.testing.assert_array_equal(m.weight(i).numpy(), lin.weight.numpy())
        np.testing.assert_array_equal(m.bias(i).numpy(), lin.bias.numpy())
    for i, w in enumerate(m.weights()):  # kaiming_uniform_(a=√5): U(±1/√fan_in), as the bias
        assert np.abs(w.numpy()).max() <= 1 / np.sqrt(w.shape[1])
    single = nn.FusedMLP(3, [], 2)  # no hidden layer: one Linear
    assert [n for n, _ in single.named_parameters()] == ["weight_0", "bias_0"]


@pytest.mark.parametrize("skip_final", [False, True])
def test_fused_mlp_forward_and_gradients_against_numpy(skip_final):
    m = nn.FusedMLP(4, [6, 5], 3, skip_final_activation=skip_final)
    x_np = RNG.randn(7, 4).astype(np.float32)
    x = flow.tensor(x_np, requires_grad=True)
    y = m(x)
    y.sum().backward()
    ws = [w.numpy() for w in m.weights()]
    bs = [b.numpy() for b in m.biases()]
    want, gx, gws = _mlp_reference(x_np, ws, bs, skip_final)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)
    if not skip_final:  # a relu'd output is never negative
        assert (y.numpy() >= 0).all()
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-5, atol=1e-6)
    for w, g in zip(m.weights(), gws):
        np.testing.assert_allclose(w.grad.numpy(), g, rtol=1e-4, atol=1e-5)


def test_fused_mlp_matches_a_torch_linear_relu_stack_with_copied_weights():
    torch = pytest.importorskip("torch")
    m = nn.FusedMLP(5, [8], 4, skip_final_activation=True)
    ref = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    with torch.no_grad():
        for i, lin in enumerate([ref[0], ref[2]]):
            lin.weight.copy_(torch.from_numpy(m.weight(i).numpy()))
            lin.bias.copy_(torch.from_numpy(m.bias(i).numpy()))
    x_np = RNG.randn(3, 5).astype(np.float32)
    x, tx = flow.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    (m(x) ** 2).sum().backward()
    (ref(tx) ** 2).sum().backward()
    np.testing.assert_allclose(m(x).detach().numpy(), ref(tx).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.weight_0.grad.numpy(), ref[0].weight.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(m.bias_1.grad.numpy(), ref[2].bias.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_fused_mlp_dropout_rates_apply_in_training_only():
    m = nn.FusedMLP(4, [6], 3, hidden_dropout_rate=[0.0], out_dropout_rate=0.5)
    assert m.dropout_rate_list == [0.0, 0.5] and m.use_dropout
    x = flow.tensor(RNG.randn(50, 4).astype(np.float32))
    want = _outputs(x.numpy(), [w.numpy() for w in m.weights()], [b.numpy() for b in m.biases()], False)[-1]
    got = m(x).numpy()  # training: each output zeroed or scaled by 1 / (1 - 0.5)
    kept = got != 0
    np.testing.assert_allclose(got[kept], 2 * want[kept], rtol=1e-5)
    assert 0 < (~kept & (want != 0)).sum() < (want != 0).sum()
    m.eval()
    np.testing.assert_allclose(m(x).numpy(), want, rtol=1e-5, atol=1e-6)
    dropped = nn.FusedMLP(4, [6], 3, hidden_dropout_rate=[1.0])  # every hidden unit dropped: only the bias is left
    np.testing.assert_allclose(dropped(x).numpy(), np.broadcast_to(np.maximum(dropped.bias_1.numpy(), 0), (50, 3)))
    assert not nn.FusedMLP(4, [6], 3).use_dropout


def test_fused_mlp_functionals_errors_global_and_graph():
    x = flow.tensor(RNG.randn(6, 4).astype(np.float32))
    w0, b0 = flow.tensor(RNG.randn(5, 4).astype(np.float32)), flow.tensor(RNG.randn(5).astype(np.float32))
    w1, b1 = flow.tensor(RNG.randn(2, 5).astype(np.float32)), flow.tensor(RNG.randn(2).astype(np.float32))
    want = np.maximum(np.maximum(x.numpy() @ w0.numpy().T + b0.numpy(), 0) @ w1.numpy().T + b1.numpy(), 0)
    np.testing.assert_allclose(flow._C.fused_mlp(x, [w0, w1], [b0, b1], False).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(flow._C.fused_matmul_bias_add_relu_dropout(x, [w0, w1], [b0, b1], False,
                                                                          [0.0, 0.0]).numpy(), want, rtol=1e-5)
    with pytest.raises(RuntimeError, match="weight's second dim should be equal to input's second dim"):
        flow._C.fused_mlp(x, [w1], [b1], False)  # (fused_mlp's words; the dropout variant's differ)
    with pytest.raises(RuntimeError, match="weight's first dim should be equal to input's last dim"):
        flow._C.fused_matmul_bias_add_relu_dropout(x, [w1], [b1], False, [0.0])
    with pytest.raises(RuntimeError, match="The number of weights should be equal to biases"):
        flow._C.fused_mlp(x, [w0, w1], [b0], False)
    with pytest.raises(RuntimeError, match="Dropout rate should be >= 0.0"):
        flow._C.fused_matmul_bias_add_relu_dropout(x, [w0], [b0], False, [-0.1])

    m = nn.FusedMLP(4, [5], 2)
    local = m(x).numpy()
    p = flow.placement("cpu", ranks=[0])
    m.to_global(p, flow.sbp.broadcast)
    xg = x.to_global(p, flow.sbp.split(0))
    np.testing.assert_allclose(m(xg).numpy(), local, rtol=1e-5)

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m

        def build(self, t):
            return self.m(t)

    np.testing.assert_allclose(G()(xg).numpy(), local, rtol=1e-5)


def test_fused_mlp_on_two_ranks_batch_split_gives_one_ranks_numbers():
    x_np = RNG.randn(4, 3).astype(np.float32)

    def body():
        flow.manual_seed(0)
        p = flow.placement("cpu", [0, 1])
        m = nn.FusedMLP(3, [4], 2).to_global(p, flow.sbp.broadcast)
        x = flow.tensor(x_np, placement=p, sbp=flow.sbp.split(0), requires_grad=True)
        y = m(x)
        y.sum().backward()
        return y.numpy(), x.grad.numpy(), [w.numpy() for w in m.weights()], [b.numpy() for b in m.biases()]

    for y, gx, ws, bs in on_ranks(2, body):
        want, want_gx, _ = _mlp_reference(x_np, ws, bs, False)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gx, want_gx, rtol=1e-5, atol=1e-6)


# --- partial FC sampling ------------------------------------------------------------------------------------------
def _check_partial_fc(weight, label, mapped, sampled_label, sampled_weight, num_sample):
    assert sampled_label.shape == (num_sample,) and sampled_weight.shape == (num_sample, weight.shape[1])
    np.testing.assert_array_equal(sampled_label[mapped], label)  # mapped labels index the sampled classes
    assert len(set(sampled_label.tolist())) == num_sample  # distinct classes
    np.testing.assert_array_equal(sampled_weight, weight[sampled_label])


def test_partial_fc_sample_local_and_its_gradient():
    weight = RNG.randn(10, 3).astype(np.float32)
    label = np.array([1, 7, 1, 4], np.int64)
    w = flow.tensor(weight, requires_grad=True)
    mapped, sampled_label, sampled_weight = nn.DistributedPariticalFCSample(6)(w, flow.tensor(label))
    _check_partial_fc(weight, label, mapped.numpy(), sampled_label.numpy(), sampled_weight.numpy(), 6)
    np.testing.assert_array_equal(np.sort(sampled_label.numpy()[:3]), [1, 4, 7])  # positives come first
    (sampled_weight * flow.arange(6, dtype=flow.float32).reshape(6, 1)).sum().backward()
    want = np.zeros_like(weight)
    want[sampled_label.numpy()] = np.arange(6, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(w.grad.numpy(), want)
    assert repr(nn.DistributedPariticalFCSample(6)) == "DistributedPariticalFCSample(num_sample=6)"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = flow.distributed_partial_fc_sample(w, flow.tensor(label), 4)
    assert any(issubclass(c.category, DeprecationWarning) and "nn.DistributedPariticalFCSample" in str(c.message)
               for c in caught)
    _check_partial_fc(weight, label, out[0].numpy(), out[1].numpy(), out[2].numpy(), 4)
    with pytest.raises(TypeError, match="label must be an integer blob"):
        nn.DistributedPariticalFCSample(4)(w, flow.tensor(label.astype(np.float32)))


def test_partial_fc_sample_global_weight_split_over_two_ranks():
    weight = RNG.randn(8, 2).astype(np.float32)
    label = np.array([0, 5, 6, 5], np.int64)

    def body():
        p = flow.placement("cpu", [0, 1])
        w = flow.tensor(weight, placement=p, sbp=flow.sbp.split(0))
        lab = flow.tensor(label, placement=p, sbp=flow.sbp.broadcast)
        mapped, sl, sw = nn.DistributedPariticalFCSample(4)(w, lab)
        assert sl.sbp == (flow.sbp.split(0),) and mapped.sbp == (flow.sbp.broadcast,)
        with pytest.raises(ValueError, match="num_sample \\(3\\) and the classes \\(8\\) must divide among the 2 "
                                             "devices"):
            nn.DistributedPariticalFCSample(3)(w, lab)
        return mapped.numpy(), sl.numpy(), sw.numpy()

    for mapped, sl, sw in on_ranks(2, body):
        _check_partial_fc(weight, label, mapped, sl, sw, 4)
        assert set(sl[:2].tolist()) <= set(range(4)) and set(sl[2:].tolist()) <= set(range(4, 8))  # per shard
    with pytest.raises(ValueError, match="num_sample \\(5\\) exceeds the number of classes"):
        nn.DistributedPariticalFCSample(5)(flow.ones(2, 2), flow.tensor([0]))


# --- nn.AllReduce / _C.local_all_reduce ---------------------------------------------------------------------------
def test_all_reduce_sums_local_tensors_over_the_parallel_confs_ranks():
    from oneflow_compat._global.nn_model_parallel import ranks_of_parallel_conf

    conf = 'device_tag: "gpu" device_name: "0:0-1"'

    def body():
        r = flow.env.get_rank()
        x = flow.tensor(np.array([1.0, 2.0], np.float32) * (r + 1), requires_grad=True)
        y = nn.AllReduce(conf)(x)
        (y * flow.tensor([1.0, 3.0])).sum().backward()  # each rank's loss reaches every rank's input
        return (y.numpy(), flow._C.local_all_reduce(x).numpy(), ranks_of_parallel_conf(conf), x.grad.numpy(),
                nn.AllReduce('device_tag: "cpu" device_name: "0:1"')(x).numpy() if r == 1 else None)

    for rank, (a, b, ranks, grad, alone) in enumerate(on_ranks(2, body)):
        np.testing.assert_array_equal(a, [3.0, 6.0])
        np.testing.assert_array_equal(b, [3.0, 6.0])
        np.testing.assert_array_equal(grad, [2.0, 6.0])
        assert ranks == (0, 1)
        if rank == 1:
            np.testing.assert_array_equal(alone, [2.0, 4.0])  # a group of one (rank 0 does not call it)
    np.testing.assert_array_equal(nn.AllReduce('device_name: "0:0"')(flow.ones(3)).numpy(), np.ones(3))
    with pytest.raises(ValueError, match="names rank\\(s\\) \\[1\\], but the job has 1 rank"):
        nn.AllReduce('device_tag: "cpu" device_name: "0:0-1"')
    with pytest.raises(ValueError, match="names no devices"):
        nn.AllReduce("placement: everywhere")


# --- names --------------------------------------------------------------------------------------------------------
def test_rnn_base_classes_ofrecord_aliases_and_warmuplr_are_oneflows_names():
    assert issubclass(nn.LSTM, nn.RNNBase) and issubclass(nn.GRU, nn.RNNBase) and issubclass(nn.RNN, nn.RNNBase)
    assert issubclass(nn.GRUCell, nn.RNNCellBase) and issubclass(nn.LSTMCell, nn.RNNCellBase)
    base = nn.RNNBase("LSTM", 3, 4)  # OneFlow's RNNBase builds the parameters of any mode
    assert tuple(base.weight_ih_l0.shape) == (16, 3)
    assert nn.OfrecordReader is nn.OFRecordReader and nn.OfrecordRawDecoder is nn.OFRecordRawDecoder
    assert flow.optim.lr_scheduler.WarmUpLR is flow.optim.lr_scheduler.WarmupLR


# --- saved_tensors_hooks ------------------------------------------------------------------------------------------
def test_saved_tensors_hooks_pack_at_record_time_and_unpack_in_backward():
    import oneflow_compat.autograd.graph as graph_module  # `import oneflow.autograd.graph` resolves

    assert graph_module.saved_tensors_hooks is flow.autograd.graph.saved_tensors_hooks
    events = []

    def pack(t):
        events.append(("pack", t.numpy().tolist()))
        return ("box", t.numpy().copy())

    def unpack(obj):
        events.append(("unpack", obj[1].tolist()))
        return flow.tensor(obj[1] * 10)  # a changed value proves backward reads what unpack returns

    a = flow.ones(3, requires_grad=True)
    b = flow.ones(3, requires_grad=True) * 2
    with flow.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = a * b
    # multiply packs y before x, as OneFlow 0.9's BroadcastMul saves them (gradient_funcs/broadcast_binary_ops.cpp)
    assert events == [("pack", [2.0, 2.0, 2.0]), ("pack", [1.0, 1.0, 1.0])]
    y.sum().backward()
    assert events[2:] == [("unpack", [1.0, 1.0, 1.0]), ("unpack", [2.0, 2.0, 2.0])]
    np.testing.assert_array_equal(a.grad.numpy(), [20.0, 20.0, 20.0])  # d(a*b)/da = b, unpacked as 10 * b

    # nesting: only the innermost pair applies; outside the context nothing is packed
    outer, inner = [], []
    with flow.autograd.graph.saved_tensors_hooks(lambda t: outer.append(1) or t, lambda t: t):
        with flow.autograd.graph.saved_tensors_hooks(lambda t: inner.append(1) or t, lambda t: t):
            z = a * a
        w = a * 3
    (a * a).sum()
    assert len(inner) == 2 and len(outer) == 1
    a.grad = None
    (z + w).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [5.0, 5.0, 5.0])

    x = flow.tensor([1.0, 2.0], requires_grad=True)  # higher-order gradients still work under the hooks
    with flow.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        cube = (x * x * x).sum()
    (g,) = flow.autograd.grad(cube, x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), [3.0, 12.0])
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])

    with flow.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: flow.ones(2)):
        bad = a * 2
    with pytest.raises(RuntimeError, match="the unpack hook of .* must return a tensor of shape \\(3,\\)"):
        bad.sum().backward()
    with pytest.raises(TypeError, match="unpack_hook must be callable"):
        flow.autograd.graph.saved_tensors_hooks(lambda t: t, None)


# --- flow.asyncs --------------------------------------------------------------------------------------------------
def test_asyncs_thread_selects_a_worker_per_python_thread_and_keeps_the_values():
    from oneflow_compat.asyncs import current_worker_id

    worker, other = flow.asyncs.Thread(), flow.asyncs.Thread()
    assert worker.thread_global_id != other.thread_global_id and current_worker_id() == 0
    x = flow.tensor(RNG.randn(3, 3).astype(np.float32))
    seen = {}
    with flow.asyncs.thread(worker):
        inside = (x @ x).numpy()
        seen["main"] = current_worker_id()
        t = threading.Thread(target=lambda: seen.setdefault("other", current_worker_id()))
        t.start()
        t.join()
        with flow.asyncs.thread(other):
            seen["nested"] = current_worker_id()
    np.testing.assert_allclose(inside, (x @ x).numpy())
    assert seen == {"main": worker.thread_global_id, "other": 0, "nested": other.thread_global_id}
    assert current_worker_id() == 0

    @flow.asyncs.thread(worker)
    def decorated():
        return current_worker_id()

    assert decorated() == worker.thread_global_id
    with pytest.raises(TypeError, match="worker_thread must be made by oneflow.asyncs.Thread"):
        flow.asyncs.thread(0)


# --- nn.Graph.trace -----------------------------------------------------------------------------------------------
def test_graph_trace_turns_a_function_into_a_graph():
    @nn.Graph.trace
    def double_plus(x, y=None):
        return x * 2 + (0 if y is None else y)

    assert isinstance(double_plus, nn.Graph) and type(double_plus).__name__ == "double_plus_graph"
    out = double_plus(flow.tensor([1.0, 2.0]))
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(double_plus(flow.tensor([3.0, 5.0])).numpy(), [6.0, 10.0])  # compiled, reused
    assert double_plus._compiled is not None
    with pytest.raises(AssertionError, match="nn.Graph.trace only support function currently"):
        nn.Graph.trace(nn.Linear(2, 2))


# --- docstring-example fixes --------------------------------------------------------------------------------------
def test_tensor_buffer_to_tensor_appends_instance_shape_to_a_2d_buffer():
    a = RNG.randn(4, 3, 5, 2).astype(np.float32)
    buf = flow.tensor_to_tensor_buffer(flow.tensor(a), instance_dims=2)
    assert tuple(buf.shape) == (4, 3)
    out = flow.tensor_buffer_to_tensor(buf, instance_shape=(5, 2), dtype=flow.float)
    assert tuple(out.shape) == (4, 3, 5, 2)
    np.testing.assert_array_equal(out.numpy(), a)
    with pytest.raises(ValueError, match="buffer 0 holds shape \\(5, 2\\), instance_shape is \\(2, 5\\)"):
        flow.tensor_buffer_to_tensor(buf, instance_shape=(2, 5), dtype=flow.float).numpy()


def test_parameter_containers_print_nn_parameter_by_its_public_name():
    pl = nn.ParameterList([nn.Parameter(flow.ones(2, 3)), nn.Parameter(flow.ones(4))])
    pd = nn.ParameterDict({"left": nn.Parameter(flow.ones(5))})
    assert repr(pl) == ("ParameterList(\n"
                        "    (0): Parameter containing: [<class 'oneflow.nn.Parameter'> of size 2x3]\n"
                        "    (1): Parameter containing: [<class 'oneflow.nn.Parameter'> of size 4]\n)")
    # (one line of extra_repr and no children: on the module's line, as Module.__repr__ prints it)
    assert repr(pd) == "ParameterDict(  (left): Parameter containing: [<class 'oneflow.nn.Parameter'> of size 5])"


def test_param_group_prints_options_then_params_as_oneflow():
    w = nn.Parameter(flow.ones(2))
    o = flow.optim.SGD([w], lr=0.5)
    text = repr(o.param_groups[0])
    # OneFlow 0.9's SGD options (nn/optimizer/sgd.py), `fused` last; the params after them
    assert text.startswith("{'lr': 0.5, 'momentum': 0.0, 'dampening': 0.0, 'weight_decay': 0.0, 'nesterov': False, "
                           "'maximize': False, 'fused': False, 'params': [tensor([1., 1.]")
    assert list(o.param_groups[0].keys())[0] == "params"  # (the group itself is unchanged)


def test_register_hook_returns_none_and_eye_fills_the_identity():
    x = flow.ones(2, requires_grad=True)
    assert x.register_hook(lambda g: g) is None
    assert (x * 2).register_hook(lambda g: g) is None
    w = flow.empty(3, 5)
    assert nn.init.eye_(w) is w
    np.testing.assert_array_equal(w.numpy(), np.eye(3, 5))
    g = flow.empty(4, 2, placement=flow.placement("cpu", ranks=[0]), sbp=flow.sbp.split(0))
    nn.init.eye_(g)
    np.testing.assert_array_equal(g.numpy(), np.eye(4, 2))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        nn.init.eye_(flow.empty(2, 2, 2))


def test_graph_prints_a_module_as_oneflow_09_proxy():
    class LinearGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3, 8, False)

        def build(self, x):
            return self.linear(x)

    g = LinearGraph()
    assert repr(g.linear) == (
        "(MODULE:linear:Linear(in_features=3, out_features=8, bias=False)): (\n"
        "  (PARAMETER:linear.weight:tensor(..., size=(8, 3), dtype=oneflow.float32, requires_grad=True)): ()\n"
        "  (GraphModule:linear()): ()\n)")


# --- nn.RawReader / nn.GPTIndexedBinDataReader --------------------------------------------------------------------
def _raw_files(tmp_path):
    data = RNG.randn(7, 2, 3).astype(np.float32)
    data[:3].tofile(str(tmp_path / "f0"))
    (tmp_path / "empty").write_bytes(b"")
    data[3:].tofile(str(tmp_path / "f1"))
    return data, [str(tmp_path / "f0"), str(tmp_path / "empty"), str(tmp_path / "f1")]


def test_raw_reader_reads_fixed_size_instances_in_order_wrapping_around(tmp_path):
    data, files = _raw_files(tmp_path)
    reader = nn.RawReader(files, (2, 3), flow.float32, 3, random_shuffle=False)
    got = [reader().numpy() for _ in range(4)]
    # 7 instances, batches of 3: ceil(7 / 3) = 3 batches, the last one wrapping to the first file; then again
    for k, idx in enumerate([[0, 1, 2], [3, 4, 5], [6, 0, 1], [0, 1, 2]]):
        np.testing.assert_array_equal(got[k], data[idx])
    shuffled = nn.RawReader(files, (2, 3), flow.float32, 3, random_seed=5)
    epoch = [shuffled().numpy() for _ in range(3)]
    firsts = sorted(int(np.where((data == e[0]).all(axis=(1, 2)))[0][0]) for e in epoch)
    assert firsts == [0, 3, 6]  # one epoch: every batch (block) once, in some order
    again = nn.RawReader(files, (2, 3), flow.float32, 3, random_seed=5)
    np.testing.assert_array_equal(again().numpy(), epoch[0])  # the seed decides the order
    (tmp_path / "odd").write_bytes(b"\0" * 10)
    with pytest.raises(ValueError, match="holds 10 bytes, not a multiple of the instance size \\(24 bytes\\)"):
        nn.RawReader([str(tmp_path / "odd")], (2, 3), flow.float32, 2)()
    with pytest.raises(ValueError, match="RawReader: files must be a non-empty list"):
        nn.RawReader(str(tmp_path / "f0"), (2, 3), flow.float32, 2)


def test_raw_and_gpt_readers_split_over_two_ranks_read_one_ranks_batch(tmp_path):
    from oneflow_compat.datasets import megatron_io

    data, files = _raw_files(tmp_path)
    docs = [np.arange(k * 100, k * 100 + 5 + k) for k in range(6)]  # 45 tokens
    prefix = str(tmp_path / "ds")
    megatron_io.write_dataset(prefix, docs)
    stream = np.concatenate(docs)

    def body():
        p = flow.placement("cpu", [0, 1])
        raw = nn.RawReader(files, (2, 3), flow.float32, 4, random_shuffle=False, placement=p, sbp=flow.sbp.split(0))
        whole = nn.RawReader(files, (2, 3), flow.float32, 4, random_shuffle=False, placement=p,
                             sbp=flow.sbp.broadcast)
        gpt = nn.GPTIndexedBinDataReader(prefix, 4, 12, 4, shuffle=False, dtype=flow.int32, placement=p,
                                         sbp=flow.sbp.split(0))
        a, b = raw(), raw()
        return a.numpy(), b.numpy(), a.to_local().numpy(), whole().numpy(), gpt().numpy(), gpt().numpy()

    for rank, (a, b, mine, whole, g0, g1) in enumerate(on_ranks(2, body)):
        np.testing.assert_array_equal(a, data[[0, 1, 2, 3]])
        np.testing.assert_array_equal(b, data[[4, 5, 6, 0]])
        np.testing.assert_array_equal(mine, data[[0, 1]] if rank == 0 else data[[2, 3]])
        np.testing.assert_array_equal(whole, data[[0, 1, 2, 3]])
        assert g0.dtype == np.int32 and g0.shape == (4, 5)
        np.testing.assert_array_equal(g0, np.stack([stream[k * 4: k * 4 + 5] for k in range(4)]))
        np.testing.assert_array_equal(g1, np.stack([stream[k * 4: k * 4 + 5] for k in range(4, 8)]))
    local = nn.GPTIndexedBinDataReader(prefix, 4, 12, 4, shuffle=False)
    assert local().dtype == flow.int64
    with pytest.raises(ValueError, match="split index 2 is out of range, split_sizes \\(1, 1\\)"):
        nn.GPTIndexedBinDataReader(prefix, 4, 12, 4, split_sizes=(1, 1), split_index=2)
