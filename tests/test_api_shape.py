"""OneFlow 0.9's shape, joining, indexing, product and linalg names of its API reference (oneflow.rst, tensor.rst,
linalg.rst at v0.9.0; the api-shape team): values and gradients against torch on the same float64 values, the
host-valued ones against numpy written here, one global-tensor case per family (placement [0], as the in-process
tests run), one nn.Graph case per composing family, and the exact error of one bad input per family."""
import numpy as np
import pytest

import oneflow_compat as flow

torch = pytest.importorskip("torch")

P0 = flow.placement("cpu", [0])
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(fn_flow, fn_torch, *arrays, grad=True, rtol=1e-6, atol=1e-9, glob=False):
    """fn on flow tensors (global on P0, split(0), when glob) and torch tensors of `arrays`: outputs equal, and the
    gradients of sum(out * w) with respect to every input."""
    def mk_f(a):
        t = flow.tensor(a, dtype=flow.float64)
        if glob:
            t = t.to_global(placement=P0, sbp=S0 if t.ndim else B)
        t.requires_grad = grad
        return t

    fs = [mk_f(a) for a in arrays]
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=grad) for a in arrays]
    outs_f, outs_t = _flat(fn_flow(*fs)), _flat(fn_torch(*ts))
    assert len(outs_f) == len(outs_t)
    rng = np.random.default_rng(0)
    loss_f, loss_t = 0, 0
    for of, ot in zip(outs_f, outs_t):
        assert of.is_global == glob
        assert tuple(of.shape) == tuple(ot.shape)
        np.testing.assert_allclose(of.numpy(), ot.detach().numpy(), rtol=rtol, atol=atol)
        if grad and ot.dtype.is_floating_point:
            w = rng.standard_normal(tuple(ot.shape))
            wf = flow.tensor(w, dtype=flow.float64)
            if glob:
                wf = wf.to_global(placement=P0, sbp=B)
            loss_f = loss_f + (of * wf).sum()
            loss_t = loss_t + (ot * torch.tensor(w)).sum()
    if grad and not isinstance(loss_t, int):
        loss_f.backward()
        loss_t.backward()
        for xf, xt in zip(fs, ts):
            want = np.zeros(xt.shape) if xt.grad is None else xt.grad.numpy()
            np.testing.assert_allclose(xf.grad.numpy(), want, rtol=rtol, atol=atol)
    return outs_f


R = np.random.default_rng(7)


def rnd(*shape):
    return R.standard_normal(shape)


def on(x, values, **kw):
    """A tensor of `values` placed like x (broadcast on P0 when x is global)."""
    t = flow.tensor(values, **kw)
    return t.to_global(placement=P0, sbp=B) if x.is_global else t


# --- at least n dims, stacking ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("glob", [False, True])
def test_atleast_and_stacks_match_torch(glob):
    a, b = rnd(3, 4), rnd(3, 4)
    for name in ("hstack", "vstack", "dstack", "column_stack", "row_stack"):
        check(lambda x, y, n=name: getattr(flow, n)([x, y]), lambda x, y, n=name: getattr(torch, n)([x, y]),
              a, b, glob=glob)
    check(lambda x, y: flow.hstack((x, y)), lambda x, y: torch.hstack((x, y)), rnd(5), rnd(2))
    check(lambda x, y: flow.column_stack([x, y]), lambda x, y: torch.column_stack([x, y]), rnd(5), rnd(5, 2))
    check(lambda x, y: flow.vstack([x, y]), lambda x, y: torch.vstack([x, y]), rnd(5), rnd(5))
    for n in (1, 2, 3):
        for shape in ((), (4,), (2, 3), (2, 3, 4)):
            f, t = getattr(flow, "atleast_%dd" % n), getattr(torch, "atleast_%dd" % n)
            check(f, t, rnd(*shape), glob=glob and len(shape) > 0)
        outs = getattr(flow, "atleast_%dd" % n)(flow.tensor(1.0), flow.ones(2))
        want = getattr(torch, "atleast_%dd" % n)(torch.tensor(1.0), torch.ones(2))
        assert isinstance(outs, tuple) and [tuple(o.shape) for o in outs] == [tuple(w.shape) for w in want]


def test_row_stack_is_vstack_and_stack_errors():
    assert flow.row_stack is flow.vstack and flow._C.row_stack is flow.vstack
    x = flow.tensor(rnd(2, 3))
    np.testing.assert_array_equal(flow.row_stack([x, x]).numpy(), flow.vstack([x, x]).numpy())
    with pytest.raises(RuntimeError, match=r"hstack\(\): expects a non-empty TensorList"):
        flow.hstack([])


# --- splitting ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("glob", [False, True])
def test_splits_match_torch(glob):
    a = rnd(7, 6, 4)
    for arg in (3, 1, 7, [2, 5], [-2], [1, 1, 9], (0, 3)):
        for dim in (0, 1, -1):
            check(lambda x, s=arg, d=dim: flow.tensor_split(x, s, d),
                  lambda x, s=arg, d=dim: torch.tensor_split(x, s, d), a, glob=glob)
    check(lambda x: flow.hsplit(x, 2), lambda x: torch.hsplit(x, 2), a, glob=glob)
    check(lambda x: flow.hsplit(x, [1, 4]), lambda x: torch.hsplit(x, [1, 4]), a, glob=glob)
    check(lambda x: flow.hsplit(x, 2), lambda x: torch.hsplit(x, 2), rnd(6))
    check(lambda x: flow.vsplit(x, [3]), lambda x: torch.vsplit(x, [3]), a, glob=glob)
    check(lambda x: flow.tensor_split(x, flow.tensor([1, 3]), 1),
          lambda x: torch.tensor_split(x, torch.tensor([1, 3]), 1), a)


def test_split_errors():
    x = flow.tensor(rnd(7, 6))
    with pytest.raises(RuntimeError, match="flow.hsplit attempted to split along dimension 1, but the size of the "
                                           "dimension 6 is not divisible by the split_size 4!"):
        flow.hsplit(x, 4)
    with pytest.raises(RuntimeError, match="flow.vsplit requires a tensor with at least 2 dimension, but got a "
                                           "tensor with 1 dimensions!"):
        flow.vsplit(flow.ones(4), 2)
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0"):
        flow.tensor_split(x, 0)


# --- dims: movedim, select, swap, diagonal -------------------------------------------------------------------------
@pytest.mark.parametrize("glob", [False, True])
def test_dim_functions_match_torch(glob):
    a = rnd(3, 4, 5)
    check(lambda x: flow.movedim(x, 0, 2), lambda x: torch.movedim(x, 0, 2), a, glob=glob)
    check(lambda x: flow.movedim(x, [0, 1], [2, 0]), lambda x: torch.movedim(x, [0, 1], [2, 0]), a, glob=glob)
    check(lambda x: flow.select(x, 1, -2), lambda x: torch.select(x, 1, -2), a, glob=glob)
    check(lambda x: flow.swapaxes(x, 0, 2), lambda x: torch.swapaxes(x, 0, 2), a, glob=glob)
    check(lambda x: x.swapdims(1, -1), lambda x: x.swapdims(1, -1), a, glob=glob)
    for off in (0, 1, 3, -1, -2, 7):
        for d1, d2 in ((0, 1), (2, 0), (-1, 1)):
            check(lambda x, o=off, p=d1, q=d2: flow.diagonal(x, o, p, q),
                  lambda x, o=off, p=d1, q=d2: torch.diagonal(x, o, p, q), a, glob=glob)
    check(lambda x: x.diagonal(), lambda x: x.diagonal(), rnd(4, 6), glob=glob)
    check(lambda x: flow.linalg.diagonal(x, 1), lambda x: torch.linalg.diagonal(x, offset=1), a, glob=glob)


def test_swap_aliases_and_dim_errors():
    assert flow.swapdims is flow.swapaxes and flow.Tensor.swapdims is flow.Tensor.swapaxes is flow.swapaxes
    x = flow.tensor(rnd(2, 3))
    np.testing.assert_array_equal(x.swapaxes(0, 1).numpy(), x.transpose(0, 1).numpy())
    with pytest.raises(IndexError, match=r"Index out of range \(expected to be in range of \[-3,2\], but got 3\)"):
        flow.select(x, 1, 3)
    with pytest.raises(RuntimeError, match="select\\(\\) cannot be applied to a 0-dim tensor."):
        flow.select(flow.tensor(1.0), 0, 0)
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 1, -1"):
        flow.diagonal(x, 0, 1, -1)
    with pytest.raises(IndexError, match=r"swapaxes\(\): Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        flow.swapaxes(x, 0, 2)


def test_diagonal_and_movedim_inside_nn_graph():
    class G(flow.nn.Graph):
        def build(self, x):
            return flow.diagonal(flow.movedim(x, 0, -1), 1, 0, 1)

    a = rnd(3, 4, 5)
    np.testing.assert_allclose(G()(flow.tensor(a)).numpy(),
                               torch.diagonal(torch.movedim(torch.tensor(a), 0, -1), 1, 0, 1).numpy())


# --- broadcasting, as_strided --------------------------------------------------------------------------------------
@pytest.mark.parametrize("glob", [False, True])
def test_broadcast_functions_match_torch(glob):
    assert flow.broadcast_shapes((2, 1, 3), (4, 1), 1) == flow.Size([2, 4, 3])
    assert flow.broadcast_shapes((2, 1, 3), (4, 1), 1) == torch.broadcast_shapes((2, 1, 3), (4, 1), 1)
    assert flow._C.broadcast_shapes([(2, 1, 3), (4, 1)]) == flow.Size([2, 4, 3])  # (the _C form takes one list)
    check(lambda x, y: flow.broadcast_tensors(x, y), lambda x, y: torch.broadcast_tensors(x, y),
          rnd(3, 1), rnd(1, 4), glob=glob)
    check(lambda x: flow.broadcast_to(x, (2, 3, 4)), lambda x: torch.broadcast_to(x, (2, 3, 4)), rnd(3, 1),
          glob=glob)
    check(lambda x: x.broadcast_to((2, -1, 4)), lambda x: x.broadcast_to((2, -1, 4)), rnd(3, 1), glob=glob)
    with pytest.raises(RuntimeError, match=r"input and other can't be broadcasted to a single shape. \[input's "
                                           r"shape: oneflow.Size\(\[2, 3\]\), other's shape: oneflow.Size\(\[4\]\)\]"):
        flow.broadcast_shapes((2, 3), (4,))


@pytest.mark.parametrize("glob", [False, True])
def test_as_strided_matches_torch(glob):
    a = rnd(4, 5)
    for size, stride, off in (((3, 3), (1, 2), 0), ((2, 2, 2), (5, 1, 3), 2), ((4,), (6,), 0), ((3, 2), (0, 1), 1)):
        check(lambda x, s=size, t=stride, o=off: flow.as_strided(x, s, t, o),
              lambda x, s=size, t=stride, o=off: torch.as_strided(x, s, t, o), a, glob=glob)
    with pytest.raises(RuntimeError, match="as_strided: Negative strides are not supported at the moment, got "
                                           "strides:-1"):
        flow.as_strided(flow.tensor(a), (2, 2), (1, -1))


# --- creation like a tensor ----------------------------------------------------------------------------------------
def test_randn_like_randint_like_new_ones():
    x = flow.ones(3, 4, dtype=flow.float64)
    flow.manual_seed(3)
    a = flow.randn_like(x)
    flow.manual_seed(3)
    want = flow.randn(3, 4, dtype=flow.float64)
    assert a.dtype == flow.float64 and tuple(a.shape) == (3, 4)
    np.testing.assert_array_equal(a.numpy(), want.numpy())
    b = flow.randint_like(x, 5)
    assert b.dtype == flow.int64 and tuple(b.shape) == (3, 4) and 0 <= b.numpy().min() and b.numpy().max() < 5
    c = flow.randint_like(x, 10, 12, dtype=flow.int32)
    assert c.dtype == flow.int32 and set(np.unique(c.numpy())) <= {10, 11}
    o = flow.new_ones(x)
    assert o.dtype == flow.float64 and o.numpy().tolist() == np.ones((3, 4)).tolist()
    o2 = flow.new_ones(x, (2,), dtype=flow.int32, requires_grad=False)
    assert o2.dtype == flow.int32 and o2.numpy().tolist() == [1, 1]
    g = flow.ones(4, 2, placement=P0, sbp=S0)
    gr = flow.randn_like(g)
    assert gr.is_global and gr.placement == P0 and gr.sbp == (S0,) and tuple(gr.shape) == (4, 2)
    go = flow.new_ones(g, (3,))
    # (x's sbp, as new_zeros / new_full: _handle_meta_args; one helper, creation_new.new_constant)
    assert go.is_global and go.sbp == (S0,) and go.numpy().tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(TypeError, match="randn_like\\(\\): dtype must be floating, got int64"):
        flow.randn_like(x, dtype=flow.int64)


# --- indexing: batch_gather, index_add, repeat_interleave ---------------------------------------------------------
@pytest.mark.parametrize("glob", [False, True])
def test_index_add_matches_torch(glob):
    idx = np.array([0, 4, 2, 0])
    for dim, src_shape in ((0, (4, 3)), (1, (5, 4))):
        base = rnd(5, 3) if dim == 0 else rnd(5, 5)
        check(lambda x, s, d=dim: flow.index_add(x, d, on(x, idx), s, alpha=-2.0),
              lambda x, s, d=dim: torch.index_add(x, d, torch.tensor(idx), s, alpha=-2.0),
              base, rnd(*src_shape), glob=glob)
    x, s = rnd(5, 3), rnd(4, 3)
    check(lambda a, b: a.index_add(0, flow.tensor(idx), b), lambda a, b: a.index_add(0, torch.tensor(idx), b), x, s)
    t = flow.tensor(x)
    same = t.index_add_(0, flow.tensor(idx, dtype=flow.int32), flow.tensor(s))
    assert same is t
    np.testing.assert_allclose(t.numpy(), torch.tensor(x).index_add_(0, torch.tensor(idx), torch.tensor(s)).numpy())
    with pytest.raises(TypeError, match="index_add\\(\\): Input\\(Index\\) holds the wrong type, it holds float32 , "
                                        "but desires to be int32_t or int64_t"):
        flow.index_add(flow.tensor(x), 0, flow.tensor([0.0, 1.0, 2.0, 3.0]), flow.tensor(s))


@pytest.mark.parametrize("glob", [False, True])
def test_batch_gather_matches_numpy(glob):
    x = rnd(2, 5, 3)
    idx = np.array([[0, 4, 4], [1, 1, 2]])
    xf = flow.tensor(x, requires_grad=True)
    if glob:
        xf = flow.tensor(x).to_global(placement=P0, sbp=S0)
        xf.requires_grad = True
    out = flow.batch_gather(xf, on(xf, idx))
    want = np.stack([x[b][idx[b]] for b in range(2)])
    np.testing.assert_allclose(out.numpy(), want)
    out.sum().backward()
    g = np.zeros_like(x)
    for b in range(2):
        np.add.at(g[b], idx[b], 1.0)
    np.testing.assert_allclose(xf.grad.numpy(), g)
    with pytest.raises(TypeError, match="The dtype of the indices tensor must be int32 or int64"):  # OneFlow 0.9
        flow.batch_gather(flow.tensor(x), flow.zeros(x.shape[0], 1))


@pytest.mark.parametrize("glob", [False, True])
def test_repeat_interleave_matches_torch(glob):
    a = rnd(2, 3)
    check(lambda x: flow.repeat_interleave(x, 2), lambda x: torch.repeat_interleave(x, 2), a, glob=glob)
    check(lambda x: x.repeat_interleave(3, dim=1), lambda x: x.repeat_interleave(3, dim=1), a, glob=glob)
    check(lambda x: flow.repeat_interleave(x, flow.tensor([1, 2]), dim=0),
          lambda x: torch.repeat_interleave(x, torch.tensor([1, 2]), dim=0), a, glob=glob)
    check(lambda x: flow.repeat_interleave(x, flow.tensor([0, 2, 1]), dim=-1, output_size=3),
          lambda x: torch.repeat_interleave(x, torch.tensor([0, 2, 1]), dim=-1, output_size=3), a)
    y = flow.tensor([[1, 2], [3, 4]])
    assert flow.repeat_interleave(y, 2).numpy().tolist() == [1, 1, 2, 2, 3, 3, 4, 4]  # OneFlow's docstring
    with pytest.raises(RuntimeError, match="repeats must have the same size as input along dim \\(3 repeats for "
                                           "size 2\\)"):
        flow.repeat_interleave(y, flow.tensor([1, 2, 3]), dim=0)


def test_repeat_interleave_with_tensor_repeats_refused_in_graph():
    class G(flow.nn.Graph):
        def build(self, x):
            return flow.repeat_interleave(x, flow.tensor([1, 2]), dim=0)

    with pytest.raises(RuntimeError, match="repeat_interleave\\(\\): the output's shape depends on the input's "
                                           "values"):
        G()(flow.ones(2, 3))


# --- searchsorted, bincount, in_top_k, diag -------------------------------------------------------------------------
@pytest.mark.parametrize("glob", [False, True])
def test_searchsorted_matches_torch(glob):
    seq = np.array([[1, 3, 5, 7, 9], [2, 4, 6, 8, 10]], dtype=np.float64)
    vals = np.array([[3, 6, 9], [3, 6, 9]], dtype=np.float64)
    sf, vf = flow.tensor(seq), flow.tensor(vals)
    if glob:
        sf, vf = sf.to_global(placement=P0, sbp=S0), vf.to_global(placement=P0, sbp=S0)
    for right in (False, True):
        out = flow.searchsorted(sf, vf, right=right)
        want = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right)
        assert out.dtype == flow.int64 and out.numpy().tolist() == want.numpy().tolist()
    out = flow.searchsorted(flow.tensor(seq[0]), flow.tensor(vals), out_int32=True)
    assert out.dtype == flow.int32
    assert out.numpy().tolist() == torch.searchsorted(torch.tensor(seq[0]), torch.tensor(vals)).tolist()
    nan_vals = np.array([[np.nan, 4.0, np.inf]])
    assert flow.searchsorted(flow.tensor(seq[:1]), flow.tensor(nan_vals)).numpy().tolist() == \
        torch.searchsorted(torch.tensor(seq[:1]), torch.tensor(nan_vals)).tolist() == [[5, 2, 5]]
    s = flow.searchsorted(flow.tensor(seq[0]), 5, right=True)
    assert s.ndim == 0 and int(s.numpy()) == 3
    with pytest.raises(RuntimeError, match="for searchsorted op, sorted_sequence should be 1 dimension or the first "
                                           "N-1 dimensions of boundaries tensor and input value tensor must match"):
        flow.searchsorted(flow.tensor(seq), flow.tensor(vals[:1]))


def test_bincount_matches_numpy_and_refuses_bad_input():
    x = np.array([4, 1, 1, 0, 4, 4])
    w = rnd(6)
    assert flow.bincount(flow.tensor(x)).numpy().tolist() == np.bincount(x).tolist()
    assert flow.bincount(flow.tensor(x)).dtype == flow.int64
    assert flow.tensor(x).bincount(minlength=8).numpy().tolist() == np.bincount(x, minlength=8).tolist()
    np.testing.assert_allclose(flow.bincount(flow.tensor(x), flow.tensor(w)).numpy(), np.bincount(x, w))
    g = flow.tensor(x).to_global(placement=P0, sbp=S0)
    out = flow.bincount(g)
    assert out.is_global and out.numpy().tolist() == np.bincount(x).tolist()
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs."):
        flow.bincount(flow.tensor([1, -1]))
    with pytest.raises(RuntimeError, match="bincount can only support int tensor"):
        flow.bincount(flow.tensor([1.0]))


def test_in_top_k_and_diag():
    targets = flow.tensor([0, 1], dtype=flow.int32)
    preds = flow.tensor([[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]], dtype=flow.float32)
    out = flow.in_top_k(targets, preds, 1)  # OneFlow's docstring example
    assert out.dtype == flow.bool and out.numpy().tolist() == [False, False]
    assert targets.in_top_k(preds, 2).numpy().tolist() == [False, True]
    g = targets.to_global(placement=P0, sbp=S0)
    assert flow.in_top_k(g, preds.to_global(placement=P0, sbp=S0), 3).numpy().tolist() == [True, True]
    check(lambda x: x.diag(), lambda x: x.diag(), rnd(4))
    check(lambda x: x.diag(1), lambda x: x.diag(1), rnd(3, 4), glob=True)
    check(lambda x: flow.diag(x, -1), lambda x: torch.diag(x, -1), rnd(4, 3))
    with pytest.raises(RuntimeError, match="diag\\(\\): the input must be a 1-D or 2-D tensor, got 3 dims"):
        flow.ones(2, 2, 2).diag()


# --- nms, roc_auc_score ----------------------------------------------------------------------------------------------
def _nms_numpy(boxes, scores, thr):
    order = list(np.argsort(-scores, kind="stable"))
    keep = []
    while order:
        i = order.pop(0)
        keep.append(i)
        rest = []
        for j in order:
            xx1, yy1 = max(boxes[i, 0], boxes[j, 0]), max(boxes[i, 1], boxes[j, 1])
            xx2, yy2 = min(boxes[i, 2], boxes[j, 2]), min(boxes[i, 3], boxes[j, 3])
            inter = max(0.0, xx2 - xx1) * max(0.0, yy2 - yy1)
            area = lambda b: (b[2] - b[0]) * (b[3] - b[1])  # noqa: E731
            if inter / (area(boxes[i]) + area(boxes[j]) - inter) <= thr:
                rest.append(j)
        order = rest
    return keep


def test_nms_matches_a_written_out_suppression():
    r = np.random.default_rng(1)
    xy = r.uniform(0, 10, (30, 2))
    boxes = np.concatenate([xy, xy + r.uniform(1, 5, (30, 2))], 1).astype(np.float32)
    scores = r.uniform(0, 1, 30).astype(np.float32)
    for thr in (0.1, 0.3, 0.7):
        out = flow.nms(flow.tensor(boxes), flow.tensor(scores), thr)
        assert out.dtype == flow.int64 and out.numpy().tolist() == _nms_numpy(boxes, scores, thr)
    assert flow.tensor(boxes).nms(flow.tensor(scores), 0.3).numpy().tolist() == _nms_numpy(boxes, scores, 0.3)
    g = flow.nms(flow.tensor(boxes).to_global(placement=P0, sbp=B), flow.tensor(scores).to_global(placement=P0,
                                                                                                  sbp=B), 0.3)
    assert g.is_global and g.numpy().tolist() == _nms_numpy(boxes, scores, 0.3)
    order = np.argsort(-scores, kind="stable")
    kept = set(_nms_numpy(boxes, scores, 0.3))
    mask = [1 if i in kept else 0 for i in order]
    sb = flow.tensor(boxes[order])
    c = flow._C.nms(sb, 0.3)  # OneFlow's functional form: the int8 mask of score-sorted boxes
    assert c.dtype == flow.int8 and c.numpy().tolist() == mask
    first2 = [m if sum(mask[:j + 1]) <= 2 else 0 for j, m in enumerate(mask)]
    assert flow._C.nms(sb, 0.3, 2).numpy().tolist() == first2  # keep_n: the first 2 kept boxes

    class G(flow.nn.Graph):
        def build(self, x):
            return flow._C.nms(x, 0.3)

    assert G()(sb).numpy().tolist() == mask  # the mask's shape is fixed: the op runs inside nn.Graph
    with pytest.raises(RuntimeError, match=r"nms\(\): boxes must be a Tensor\[N, 4\], got shape \(30, 3\)"):
        flow.nms(flow.tensor(boxes[:, :3]), flow.tensor(scores), 0.5)


def test_roc_auc_score_matches_pairwise_count():
    label = np.array([0, 0, 1, 1, 1, 0, 1], dtype=np.float32)
    pred = np.array([0.1, 0.4, 0.35, 0.8, 0.4, 0.2, 0.9], dtype=np.float32)
    pos, neg = pred[label == 1], pred[label == 0]
    want = np.mean([1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg])
    out = flow.roc_auc_score(flow.tensor(label), flow.tensor(pred))
    assert out.dtype == flow.float32 and tuple(out.shape) == (1,)
    np.testing.assert_allclose(out.numpy(), [want], rtol=1e-6)
    r = np.random.default_rng(3)
    label, pred = r.integers(0, 2, 300).astype(np.float32), (r.integers(0, 9, 300) / 8).astype(np.float32)
    pos, neg = pred[label == 1][:, None], pred[label == 0][None, :]
    want = ((pos > neg) + 0.5 * (pos == neg)).mean()  # every positive / negative pair, ties one half
    np.testing.assert_allclose(flow.roc_auc_score(flow.tensor(label), flow.tensor(pred)).numpy(), [want], rtol=1e-6)
    doc = flow.roc_auc_score(flow.tensor([0, 0, 1, 1], dtype=flow.float32),
                             flow.tensor([0.1, 0.4, 0.35, 0.8], dtype=flow.float32))
    np.testing.assert_allclose(doc.numpy(), [0.75])  # OneFlow's docstring example
    with pytest.raises(RuntimeError, match="roc_auc_score\\(\\): label and pred must have the same number of "
                                           "elements, got 3 and 4"):
        flow.roc_auc_score(flow.tensor([0.0, 1.0, 1.0]), flow.tensor([0.1, 0.4, 0.35, 0.8]))


# --- products: tensordot, mv, cross --------------------------------------------------------------------------------
@pytest.mark.parametrize("glob", [False, True])
def test_products_match_torch(glob):
    check(lambda a, b: flow.tensordot(a, b), lambda a, b: torch.tensordot(a, b), rnd(3, 4, 5), rnd(4, 5, 2),
          glob=glob)
    check(lambda a, b: flow.tensordot(a, b, 0), lambda a, b: torch.tensordot(a, b, 0), rnd(2, 3), rnd(4),
          glob=glob)
    check(lambda a, b: flow.tensordot(a, b, ([0, 2], [2, 1])), lambda a, b: torch.tensordot(a, b, ([0, 2], [2, 1])),
          rnd(3, 4, 5), rnd(2, 5, 3), glob=glob)
    check(lambda a, b: flow._C.tensordot(a, b, [1], [0]), lambda a, b: torch.tensordot(a, b, ([1], [0])),
          rnd(3, 4), rnd(4, 2), glob=glob)
    check(lambda a, b: flow.tensordot(a, b, flow.tensor([[0, 1], [1, 0]])),
          lambda a, b: torch.tensordot(a, b, ([0, 1], [1, 0])), rnd(3, 4), rnd(4, 3))
    check(lambda a, b: flow.mv(a, b), lambda a, b: torch.mv(a, b), rnd(4, 3), rnd(3), glob=glob)
    check(lambda a, b: a.mv(b), lambda a, b: a.mv(b), rnd(4, 3), rnd(3))
    check(lambda a, b: flow.cross(a, b), lambda a, b: torch.cross(a, b, dim=1), rnd(4, 3), rnd(4, 3), glob=glob)
    check(lambda a, b: a.cross(b, dim=0), lambda a, b: a.cross(b, dim=0), rnd(3, 5), rnd(3, 5))
    check(lambda a, b: flow.linalg.cross(a, b), lambda a, b: torch.linalg.cross(a, b), rnd(2, 4, 3), rnd(1, 4, 3),
          glob=glob)


def test_product_errors():
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has size 4 in dim 1 and "
                                           "second has size 5 in dim 0"):
        flow.tensordot(flow.ones(3, 4), flow.ones(5, 2), 1)
    with pytest.raises(RuntimeError, match="size mismatch, got 4, 4x3,2"):
        flow.mv(flow.ones(4, 3), flow.ones(2))
    with pytest.raises(RuntimeError, match="both dimension lists should have same length, got 2 and 1"):
        flow.tensordot(flow.ones(3, 4), flow.ones(4, 3), ([0, 1], [0]))
    with pytest.raises(RuntimeError, match="movedim: Invalid source or destination dims: source \\(2 dims \\) should "
                                           "contain the same number of dims as destination \\(1 dims\\)"):
        flow.movedim(flow.ones(2, 3), [0, 1], [1])
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension 1 must have length 3. Got 4 and 4"):
        flow.linalg.cross(flow.ones(2, 4), flow.ones(2, 4))


# --- linalg: norms, inv ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("glob", [False, True])
def test_linalg_norms_match_torch(glob):
    import math

    a = rnd(3, 4)
    for o in (2, 1, 3, 0.5, math.inf, -math.inf):
        check(lambda x, o=o: flow.linalg.vector_norm(x, o), lambda x, o=o: torch.linalg.vector_norm(x, o), a,
              glob=glob)
        check(lambda x, o=o: flow.linalg.vector_norm(x, o, dim=1, keepdim=True),
              lambda x, o=o: torch.linalg.vector_norm(x, o, dim=1, keepdim=True), a, glob=glob)
    for o in ("fro", 1, -1, math.inf, -math.inf):
        check(lambda x, o=o: flow.linalg.matrix_norm(x, o), lambda x, o=o: torch.linalg.matrix_norm(x, o),
              rnd(2, 3, 4), glob=glob)
        check(lambda x, o=o: flow.linalg.norm(x, o), lambda x, o=o: torch.linalg.norm(x, o), a, glob=glob)
    check(lambda x: flow.linalg.norm(x), lambda x: torch.linalg.norm(x), rnd(2, 3, 4), glob=glob)
    check(lambda x: flow.linalg.norm(x, 3, dim=0), lambda x: torch.linalg.norm(x, 3, dim=0), a, glob=glob)
    check(lambda x: flow.linalg.norm(x, dim=(0, 2)), lambda x: torch.linalg.norm(x, dim=(0, 2)), rnd(2, 3, 4),
          glob=glob)


def test_linalg_norm_errors():
    with pytest.raises(NotImplementedError, match="linalg.matrix_norm\\(\\): Not support ord is nuc."):
        flow.linalg.matrix_norm(flow.ones(2, 2), "nuc")
    with pytest.raises(RuntimeError, match="linalg.vector_norm\\(\\): only supports floating point and complex "
                                           "dtypes, but got: Int."):
        flow.linalg.vector_norm(flow.ones(2, dtype=flow.int64))
    with pytest.raises(RuntimeError, match="linalg.norm\\(\\): input must be 1-D or 2-D when dim is None and ord is "
                                           "not None"):
        flow.linalg.norm(flow.ones(2, 2, 2), 1)


@pytest.mark.parametrize("glob", [False, True])
def test_linalg_inv_matches_torch(glob):
    a = rnd(4, 4) + 4 * np.eye(4)
    check(flow.linalg.inv, torch.linalg.inv, a, glob=glob)
    b = rnd(2, 3, 3) + 3 * np.eye(3)
    check(flow.linalg.inv, torch.linalg.inv, b, glob=glob)


def test_linalg_inv_errors_and_graph():
    with pytest.raises(RuntimeError, match="linalg.inv: A must be batches of square matrices, but they are 2 by 3 "
                                           "matrices"):
        flow.linalg.inv(flow.ones(2, 3))
    with pytest.raises(RuntimeError, match="linalg.inv: the input matrix \\(or a matrix of the batch\\) is not "
                                           "invertible"):
        flow.linalg.inv(flow.ones(3, 3, dtype=flow.float64))

    class G(flow.nn.Graph):
        def build(self, x):
            return flow.linalg.inv(x)

    a = rnd(3, 3) + 3 * np.eye(3)
    np.testing.assert_allclose(G()(flow.tensor(a)).numpy(), np.linalg.inv(a), rtol=1e-10)


# --- Tensor.where, local_to_global / global_to_global, top-level pools, _C bindings --------------------------------
def test_tensor_where_is_flow_where():
    c = flow.tensor([True, False, True])
    x, y = flow.tensor([1.0, 2.0, 3.0]), flow.tensor([-1.0, -2.0, -3.0])
    assert c.where(x, y).numpy().tolist() == [1.0, -2.0, 3.0]
    assert c.where(x, 0.5).numpy().tolist() == [1.0, 0.5, 3.0]


def test_local_to_global_and_global_to_global():
    x = flow.tensor(rnd(4, 2))
    g = x.local_to_global(placement=P0, sbp=S0)
    assert g.is_global and g.sbp == (S0,) and g.placement == P0
    np.testing.assert_allclose(g.numpy(), x.numpy())
    h = g.global_to_global(sbp=B)
    assert h.is_global and h.sbp == (B,) and h.placement == P0
    np.testing.assert_allclose(h.numpy(), x.numpy())
    assert g.global_to_global() is g or g.global_to_global().sbp == (S0,)
    with pytest.raises(AssertionError, match="input must be a local tensor"):
        g.local_to_global(placement=P0, sbp=B)
    with pytest.raises(AssertionError, match="input must be a global tensor"):
        x.global_to_global(placement=P0, sbp=B)
    with pytest.raises(ValueError, match="Converting a local tensor to global tensor must have placement and sbp "
                                         "parameters."):
        x.local_to_global(placement=P0)


def test_top_level_pools_and_c_bindings_are_the_same_functions():
    import oneflow_compat.nn.functional as NF

    for n in ("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d"):
        assert getattr(flow, n) is getattr(NF, n)
    x = flow.tensor(rnd(1, 2, 6, 4))
    np.testing.assert_allclose(flow.adaptive_avg_pool2d(x, (3, 2)).numpy(),
                               torch.nn.functional.adaptive_avg_pool2d(torch.tensor(x.numpy()), (3, 2)).numpy())
    assert flow._C.swapaxes is flow.swapaxes
    assert flow._C.inv is flow.linalg.inv and flow._C.linalg_cross is flow.linalg.cross
    assert flow._C.matrix_vector_product is flow.mv


def test_composed_functions_inside_nn_graph_equal_eager():
    class G(flow.nn.Graph):
        def build(self, x, i, s):
            return (flow.as_strided(x, (2, 2), (1, 2)), flow.searchsorted(flow.sort(x[0])[0], x[1]),
                    flow.index_add(x, 0, i, s), flow.tensordot(x, x.T, 1), flow.linalg.cross(x[:, :3], x[:, 1:4]),
                    flow.linalg.norm(x), flow.linalg.matrix_norm(x, 1), flow.repeat_interleave(x, 2, 0),
                    flow.hstack([x, x]), flow.tensor_split(x, 2, 1)[1], flow.select(x, 0, 1),
                    flow.broadcast_to(x[0], (2, 4)), flow.in_top_k(i, x[:2].to(flow.float32), 1),
                    flow.diag(x[:, 0]), flow.mv(x, x[0]))

    x = flow.tensor(rnd(3, 4))
    i, s = flow.tensor([0, 2]), flow.tensor(rnd(2, 4))
    got, want = G()(x, i, s), G.build(None, x, i, s)
    assert len(got) == len(want) == 15
    for a, b in zip(got, want):
        assert tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_cross_docstring_example():
    a = flow.tensor([[-0.3956, 1.1455, 1.6895], [-0.5849, 1.3672, 0.3599], [-1.1626, 0.7180, -0.0521],
                     [-0.1339, 0.9902, -2.0225]])
    b = flow.tensor([[-0.0257, -1.4725, -1.2251], [-1.1479, -0.7005, -1.9757], [-1.3904, 0.3726, -1.1836],
                     [-0.9688, -0.7153, 0.2159]])
    out = flow.cross(a, b)  # OneFlow v0.9.0 docstr/linalg.py: dim=None takes the first dim of size 3 (here 1)
    assert out.dtype == flow.float32
    np.testing.assert_allclose(out.numpy(), [[1.0844, -0.5281, 0.6120], [-2.4491, -1.5687, 1.9791],
                                             [-0.8304, -1.3036, 0.5651], [-1.2329, 1.9883, 1.0551]], atol=1e-4)
    np.testing.assert_allclose(a.cross(b).numpy(), out.numpy())
