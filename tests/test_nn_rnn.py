"""api-nn: OneFlow 0.9's recurrent layers (nn.RNN / LSTM / GRU, the cells, flow._C's functional forms) and
nn.utils.rnn's packed sequences, against PyTorch with copied weights: outputs, final states and the gradients of
every weight and of the input; parameter names and initialisation as OneFlow v0.9.0's
python/oneflow/nn/modules/rnn.py; a global case; nn.Graph training an LSTM as eager does; errors."""
import math

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn
from oneflow_compat.nn.utils import rnn as rnn_utils


def _torch():
    return pytest.importorskip("torch")


def _copy(fm, tm, dtype):
    """torch module's parameters into the flow module (same names); both in `dtype`."""
    torch = _torch()
    tm.to(torch.float64 if dtype == np.float64 else torch.float32)
    state = {k: flow.tensor(v.detach().numpy().astype(dtype)) for k, v in tm.state_dict().items()}
    fm.load_state_dict(state)
    if dtype == np.float64:
        fm.to(flow.float64)
    assert sorted(k for k, _ in fm.named_parameters()) == sorted(k for k, _ in tm.named_parameters())


def _tol(dtype):
    return dict(rtol=1e-9, atol=1e-10) if dtype == np.float64 else dict(rtol=2e-4, atol=2e-5)


def _states(h):
    return list(h) if isinstance(h, tuple) else [h]


CONFIGS = [
    ("RNN", dict()),
    ("RNN", dict(nonlinearity="relu", num_layers=2, bidirectional=True)),
    ("RNN", dict(bias=False, batch_first=True)),
    ("GRU", dict()),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("LSTM", dict()),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(proj_size=3, num_layers=2, batch_first=True)),
    ("LSTM", dict(proj_size=2, bidirectional=True, bias=False)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", range(len(CONFIGS)))
@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
def test_rnn_modules_match_torch_outputs_states_and_gradients(k, dtype):
    torch = _torch()
    kind, kw = CONFIGS[k]
    torch.manual_seed(k)
    tm = getattr(torch.nn, kind)(4, 5, **kw)
    fm = getattr(nn, kind)(4, 5, **kw)
    _copy(fm, tm, dtype)
    rng = np.random.default_rng(k)
    x = rng.standard_normal((3, 6, 4) if kw.get("batch_first") else (6, 3, 4)).astype(dtype)
    with_h0 = k % 2 == 1  # initial states given in half the cases, zeros in the others
    D = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    h_size = kw.get("proj_size", 0) or 5
    h0 = rng.standard_normal((D, 3, h_size)).astype(dtype)
    c0 = rng.standard_normal((D, 3, 5)).astype(dtype)
    tx = torch.tensor(x, requires_grad=True)
    fx = flow.tensor(x, requires_grad=True)
    if with_h0:
        t_hx = (torch.tensor(h0), torch.tensor(c0)) if kind == "LSTM" else torch.tensor(h0)
        f_hx = (flow.tensor(h0), flow.tensor(c0)) if kind == "LSTM" else flow.tensor(h0)
        ty, th = tm(tx, t_hx)
        fy, fh = fm(fx, f_hx)
    else:
        ty, th = tm(tx)
        fy, fh = fm(fx)
    np.testing.assert_allclose(fy.numpy(), ty.detach().numpy(), **_tol(dtype))
    for a, b in zip(_states(fh), _states(th)):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), **_tol(dtype))
    w = rng.standard_normal(tuple(ty.shape)).astype(dtype)
    loss_t = (ty * torch.tensor(w)).sum() + sum(s.sum() for s in _states(th))
    loss_f = (fy * flow.tensor(w)).sum()
    for s in _states(fh):
        loss_f = loss_f + s.sum()
    loss_t.backward()
    loss_f.backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), **_tol(dtype))
    tgrads = dict(tm.named_parameters())
    for name, p in fm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tgrads[name].grad.numpy(), err_msg=name, **_tol(dtype))


def test_parameter_names_shapes_initialisation_and_repr():
    flow.manual_seed(0)
    m = nn.LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5)
    names = [n for n, _ in m.named_parameters()]
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert names[5:10] == [n + "_reverse" for n in names[:5]]
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert shapes["weight_ih_l0"] == (80, 10) and shapes["weight_hh_l0"] == (80, 5)
    assert shapes["weight_ih_l1"] == (80, 10) and shapes["weight_hr_l1_reverse"] == (5, 20)
    bound = 1 / math.sqrt(20)
    allv = np.concatenate([p.numpy().ravel() for p in m.parameters()])
    assert np.abs(allv).max() <= bound and np.abs(allv).max() > 0.95 * bound
    assert allv.std() == pytest.approx(bound / math.sqrt(3), rel=0.1)
    assert repr(m) == "LSTM(10, 20, proj_size=5, num_layers=2, bidirectional=True)"
    assert repr(nn.GRU(3, 4, bias=False, batch_first=True, dropout=0.5, num_layers=2)) == \
        "GRU(3, 4, num_layers=2, bias=False, batch_first=True, dropout=0.5)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"
    assert [n for n, _ in nn.GRUCell(3, 4).named_parameters()] == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    assert tuple(nn.LSTMCell(3, 4).weight_ih.shape) == (16, 3)
    assert len(m.all_weights) == 4 and m.all_weights[1][0] is m.weight_ih_l0_reverse
    flow.manual_seed(0)
    again = nn.LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5)
    np.testing.assert_array_equal(again.weight_hh_l1.numpy(), m.weight_hh_l1.numpy())


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch_batched_and_unbatched(kind):
    torch = _torch()
    torch.manual_seed(1)
    kw = dict(nonlinearity="relu") if kind == "RNNCell" else {}
    tm, fm = getattr(torch.nn, kind)(4, 3, **kw), getattr(nn, kind)(4, 3, **kw)
    _copy(fm, tm, np.float64)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 4))
    h = rng.standard_normal((5, 3))
    c = rng.standard_normal((5, 3))
    tx, fx = torch.tensor(x, requires_grad=True), flow.tensor(x, requires_grad=True)
    th, fh = (torch.tensor(h), torch.tensor(c)), (flow.tensor(h), flow.tensor(c))
    if kind != "LSTMCell":
        th, fh = th[0], fh[0]
    t_out, f_out = _states(tm(tx, th)), _states(fm(fx, fh))
    for a, b in zip(f_out, t_out):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    sum(o.sum() for o in t_out).backward()
    loss = f_out[0].sum()
    for o in f_out[1:]:
        loss = loss + o.sum()
    loss.backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fm.weight_hh.grad.numpy(), tm.weight_hh.grad.numpy(), rtol=1e-10, atol=1e-12)
    # unbatched (1-D input) and no state: zeros
    t1, f1 = _states(tm(tx[0].detach())), _states(fm(flow.tensor(x[0])))
    for a, b in zip(f1, t1):
        assert tuple(a.shape) == (3,)
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_unbatched_sequence_and_functional_forms():
    torch = _torch()
    torch.manual_seed(3)
    tm, fm = torch.nn.GRU(4, 3, num_layers=2), nn.GRU(4, 3, num_layers=2)
    _copy(fm, tm, np.float64)
    x = np.random.default_rng(4).standard_normal((7, 4))
    ty, th = tm(torch.tensor(x))
    fy, fh = fm(flow.tensor(x))
    assert tuple(fy.shape) == (7, 3) and tuple(fh.shape) == (2, 3)
    np.testing.assert_allclose(fy.numpy(), ty.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(fh.numpy(), th.detach().numpy(), rtol=1e-10)
    # flow._C.gru: (input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    xb = flow.tensor(x[:, None, :])
    out = flow._C.gru(xb, flow.zeros(2, 1, 3, dtype=flow.float64), fm._flat_weights, True, 2, 0.0, False, False,
                      False)
    np.testing.assert_allclose(out[0].numpy()[:, 0], ty.detach().numpy(), rtol=1e-10)
    # the cells' functional forms
    w_ih, w_hh = np.random.default_rng(5).standard_normal((2, 8, 2))
    h = flow._C.rnn_tanh_cell(flow.tensor(x[:2, :2]), flow.zeros(2, 8, dtype=flow.float64), flow.tensor(w_ih),
                              flow.tensor(np.eye(8)))
    np.testing.assert_allclose(h.numpy(), np.tanh(x[:2, :2] @ w_ih.T), rtol=1e-12)
    assert flow._C.lstm_cell is not None and flow._C.rnn_relu is not None


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequences_through_rnn_match_torch(kind, enforce_sorted):
    torch = _torch()
    tnu = torch.nn.utils.rnn
    torch.manual_seed(5)
    kw = dict(num_layers=2, bidirectional=True, batch_first=True)
    tm, fm = getattr(torch.nn, kind)(3, 4, **kw), getattr(nn, kind)(3, 4, **kw)
    _copy(fm, tm, np.float64)
    lengths = [5, 3, 3, 1] if enforce_sorted else [2, 5, 1, 3]
    x = np.random.default_rng(6).standard_normal((4, 5, 3))
    tx, fx = torch.tensor(x, requires_grad=True), flow.tensor(x, requires_grad=True)
    tp = tnu.pack_padded_sequence(tx, lengths, batch_first=True, enforce_sorted=enforce_sorted)
    fp = rnn_utils.pack_padded_sequence(fx, lengths, batch_first=True, enforce_sorted=enforce_sorted)
    assert isinstance(fp, rnn_utils.PackedSequence)
    np.testing.assert_array_equal(fp.batch_sizes.numpy(), tp.batch_sizes.numpy())
    assert fp.batch_sizes.dtype == flow.int64
    np.testing.assert_allclose(fp.data.numpy(), tp.data.detach().numpy())
    t_out, t_h = tm(tp)
    f_out, f_h = fm(fp)
    assert isinstance(f_out, rnn_utils.PackedSequence)
    np.testing.assert_allclose(f_out.data.numpy(), t_out.data.detach().numpy(), rtol=1e-10, atol=1e-12)
    for a, b in zip(_states(f_h), _states(t_h)):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    t_pad, t_len = tnu.pad_packed_sequence(t_out, batch_first=True, total_length=6)
    f_pad, f_len = rnn_utils.pad_packed_sequence(f_out, batch_first=True, total_length=6)
    np.testing.assert_allclose(f_pad.numpy(), t_pad.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert f_len.dtype == flow.float32  # OneFlow 0.9's pad_packed_sequence returns float lengths (its docstring)
    np.testing.assert_array_equal(f_len.numpy(), t_len.numpy().astype(np.float32))
    w = np.random.default_rng(7).standard_normal(tuple(t_pad.shape))
    ((t_pad * torch.tensor(w)).sum() + sum(s.sum() for s in _states(t_h))).backward()
    loss = (f_pad * flow.tensor(w)).sum()
    for s in _states(f_h):
        loss = loss + s.sum()
    loss.backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    tg = dict(tm.named_parameters())
    for name, p in fm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tg[name].grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=name)


def test_pad_sequence_pack_sequence_and_unpack_as_documented():
    a, b, c = flow.tensor([1, 2, 3]), flow.tensor([4, 5]), flow.tensor([6])
    packed = rnn_utils.pack_sequence([a, b, c])
    np.testing.assert_array_equal(packed.data.numpy(), [1, 4, 6, 2, 5, 3])
    np.testing.assert_array_equal(packed.batch_sizes.numpy(), [3, 2, 1])
    assert [t.numpy().tolist() for t in rnn_utils.unpack_sequence(packed)] == [[1, 2, 3], [4, 5], [6]]
    seq = flow.tensor([[4, 5, 6], [1, 2, 0], [3, 0, 0]])
    p2 = rnn_utils.pack_padded_sequence(seq, [3, 2, 1], batch_first=True)
    np.testing.assert_array_equal(p2.data.numpy(), [4, 1, 3, 5, 2, 6])
    unpacked, lens = rnn_utils.pad_packed_sequence(p2, batch_first=True)
    np.testing.assert_array_equal(unpacked.numpy(), seq.numpy())
    np.testing.assert_array_equal(lens.numpy(), np.array([3.0, 2.0, 1.0], np.float32))
    out = rnn_utils.pad_sequence([flow.ones(25, 30), flow.ones(22, 30), flow.ones(15, 30)])
    assert tuple(out.shape) == (25, 3, 30) and float(out.sum().numpy()) == (25 + 22 + 15) * 30
    out = rnn_utils.pad_sequence([flow.ones(2, 1), flow.ones(3, 1)], batch_first=True, padding_value=-1.0)
    np.testing.assert_array_equal(out.numpy()[:, :, 0], [[1, 1, -1], [1, 1, 1]])
    data, bs = flow._C.pack_padded_sequence(seq, flow.tensor([3, 2, 1]), True)
    np.testing.assert_array_equal(data.numpy(), [4, 1, 3, 5, 2, 6])


def test_rnn_on_global_tensors_matches_local():
    P0 = flow.placement("cpu", ranks=[0])
    flow.manual_seed(2)
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    x = np.random.default_rng(8).standard_normal((5, 2, 3)).astype(np.float32)
    ly, (lh, lc) = m(flow.tensor(x))
    ly.sum().backward()
    local_grad = m.weight_ih_l1.grad.numpy().copy()
    m.zero_grad()
    gm = m.to_global(placement=P0, sbp=flow.sbp.broadcast)
    gx = flow.tensor(x).to_global(placement=P0, sbp=flow.sbp.split(1))
    gy, (gh, gc) = gm(gx)
    assert gy.is_global and gh.is_global
    np.testing.assert_allclose(gy.numpy(), ly.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gc.numpy(), lc.numpy(), rtol=1e-6, atol=1e-6)
    gy.sum().backward()
    np.testing.assert_allclose(gm.weight_ih_l1.grad.numpy(), local_grad, rtol=1e-5, atol=1e-6)
    cell = nn.GRUCell(3, 4).to_global(placement=P0, sbp=flow.sbp.broadcast)
    h = cell(flow.tensor(x[0]).to_global(placement=P0, sbp=flow.sbp.split(0)))
    assert h.is_global and tuple(h.shape) == (2, 4)


def test_lstm_trained_in_nn_graph_as_eager():
    flow.manual_seed(4)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(3, 6, num_layers=2, batch_first=True)
            self.head = nn.Linear(6, 2)

        def forward(self, x):
            y, (h, c) = self.lstm(x)
            return self.head(y[:, -1]) + c.sum()

    def run(graph):
        flow.manual_seed(4)
        net = Net()
        opt = flow.optim.SGD(net.parameters(), lr=0.1)
        xs = np.random.default_rng(9).standard_normal((3, 4, 5, 3)).astype(np.float32)

        class Train(nn.Graph):
            def __init__(self):
                super().__init__()
                self.net = net
                self.add_optimizer(opt)

            def build(self, x):
                loss = (self.net(x) ** 2).mean()
                loss.backward()
                return loss

        step = Train()
        losses = []
        for x in xs:
            if graph:
                losses.append(float(step(flow.tensor(x)).numpy()))
            else:
                loss = (net(flow.tensor(x)) ** 2).mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
                losses.append(float(loss.numpy()))
        return losses, net.lstm.weight_hh_l1.numpy()

    eager_losses, eager_w = run(False)
    graph_losses, graph_w = run(True)
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    np.testing.assert_allclose(graph_w, eager_w, rtol=1e-5, atol=1e-6)
    assert eager_losses[-1] != eager_losses[0]


def test_dropout_between_layers_in_training_only():
    flow.manual_seed(6)
    m = nn.GRU(3, 50, num_layers=2, dropout=0.5)
    x = flow.tensor(np.random.default_rng(1).standard_normal((4, 2, 3)).astype(np.float32))
    a, _ = m(x)
    b, _ = m(x)
    assert not np.allclose(a.numpy(), b.numpy())  # a fresh mask per call
    m.eval()
    c, _ = m(x)
    d, _ = m(x)
    np.testing.assert_array_equal(c.numpy(), d.numpy())
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.RNN(2, 3, dropout=0.2)


def test_bad_inputs_raise_oneflow_errors():
    m = nn.LSTM(4, 5)
    with pytest.raises(RuntimeError, match=r"^input.size\(-1\) must be equal to input_size. Expected 4, got 3$"):
        m(flow.zeros(2, 3, 3))
    with pytest.raises(RuntimeError, match=r"^Expected hidden\[0\] size \(1, 3, 5\), got \[1, 2, 5\]$"):
        m(flow.zeros(2, 3, 4), (flow.zeros(1, 2, 5), flow.zeros(1, 3, 5)))
    with pytest.raises(ValueError, match="^proj_size argument is only supported for LSTM, not RNN or GRU$"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="^proj_size has to be smaller than hidden_size$"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="^Unknown nonlinearity 'gelu'$"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(AssertionError, match="^GRUCell: Expected input to be 1-D or 2-D but received 3-D tensor$"):
        nn.GRUCell(3, 4)(flow.zeros(1, 2, 3))
    with pytest.raises(RuntimeError, match="^`lengths` array must be sorted in decreasing order when `enforce"):
        rnn_utils.pack_padded_sequence(flow.zeros(3, 2, 1), [1, 3])
    with pytest.raises(ValueError, match="^Expected total_length to be at least the length of the longest"):
        rnn_utils.pad_packed_sequence(rnn_utils.pack_sequence([flow.ones(3), flow.ones(2)]), total_length=2)


def test_two_ranks_equal_one_rank():
    """The api-nn layers (recurrent, distances, deform_conv2d, RMSNorm, FusedBatchNorm2d, sparse softmax cross
    entropy) on 2 MPI ranks, inputs split or broadcast: tests/mpi_scripts/nn_api_global.py."""
    import os
    import re
    import sys

    pytest.importorskip("mpi4py")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_global_mpi import MPIEXEC, SCRIPTS, mpi

    if not MPIEXEC.exists():
        pytest.skip("no mpiexec beside %s" % sys.executable)
    done = mpi(2, SCRIPTS / "nn_api_global.py", timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert done.stdout.rstrip().endswith("DONE"), done.stdout[-2000:]
    seen = re.findall(r"^OK (\S+) (.*)$", done.stdout, re.M)
    assert {n for n, _ in seen} == {"LSTM", "GRU", "RNN", "LSTMCell", "CosineSimilarity", "PairwiseDistance",
                                     "deform_conv2d", "RMSNorm", "FusedBatchNorm2d", "sparse_softmax_cross_entropy"}
    assert len(seen) == 21


def test_packed_sequence_made_inside_nn_graph_equals_eager():
    """pack_padded_sequence inside build: the batch sizes are kept on the host beside their tensor, so the RNN and
    pad_packed_sequence run in the graph (whose tensors have no value while build is traced)."""
    flow.manual_seed(8)
    m = nn.LSTM(3, 4, batch_first=True, bidirectional=True)
    lengths = [2, 4, 1]

    def run(x):
        p = rnn_utils.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, (h, c) = m(p)
        y, lens = rnn_utils.pad_packed_sequence(out, batch_first=True)
        return y, h, c, lens

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m

        def build(self, x):
            return run(x)

    x = flow.tensor(np.random.default_rng(10).standard_normal((3, 4, 3)).astype(np.float32))
    for a, b in zip(G()(x), run(x)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(run(x)[3].numpy(), np.array(lengths, np.float32))
