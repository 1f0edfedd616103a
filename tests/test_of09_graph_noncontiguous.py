"""nn.Graph with non-contiguous (strided view) tensors, as OneFlow 0.9 treats them.

OneFlow v0.9.0: a Parameter wraps `data->detach()` (core/framework/tensor.h:447-460), so a Parameter made from
`x.transpose(0, 1)` keeps that view's strides and is not contiguous; nn.Graph makes its state tensors contiguous
in place before building (nn/graph/graph.py:660-664, 888), its input tensors before compiling and before every run
(graph.py:796, 1128, 1441-1448), and a free eager tensor as the build captures it
(core/framework/op_interpreter/lazy_op_interpreter.cpp:204-208). The numbers are those of the contiguous tensors.
"""
import numpy as np

import oneflow_compat as flow


def _graph(module, build, opt=None):
    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = module
            if opt is not None:
                self.add_optimizer(opt)

        def build(self, *args):
            return build(self, *args)

    return G()


def test_parameter_of_a_transposed_tensor_keeps_its_strides_and_storage():
    base = flow.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    w = flow.nn.Parameter(base.transpose(0, 1))
    assert not w.is_contiguous()
    assert w.stride() == (1, 4)
    assert w.is_leaf and w.requires_grad
    np.testing.assert_array_equal(w.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4).T)
    with flow.no_grad():  # the same storage as the tensor it was made from (0.9's detach)
        w[0, 1] = 100.0
    assert base.numpy()[1, 0] == 100.0
    contiguous = flow.nn.Parameter(flow.ones(4, 3))
    assert contiguous.is_contiguous() and contiguous.stride() == (3, 1)


def test_graph_makes_states_inputs_and_free_tensors_contiguous_in_place_and_trains_as_numpy():
    w0 = np.arange(12, dtype=np.float32).reshape(3, 4)
    x0 = np.arange(8, dtype=np.float32).reshape(4, 2)
    bias0 = np.array([[1, 2, 3], [3, 4, 5]], dtype=np.float32)
    w = flow.nn.Parameter(flow.tensor(w0).transpose(0, 1))
    module = flow.nn.Module()
    module.weight = w
    opt = flow.optim.SGD([w], lr=0.1)
    bias = flow.tensor(bias0.T.copy()).transpose(0, 1)  # a free eager tensor, non-contiguous
    assert not bias.is_contiguous()

    def build(g, x):
        loss = (flow.matmul(x, g.m.weight) + bias).sum()
        loss.backward()
        return loss

    graph = _graph(module, build, opt)
    assert not graph.m.weight.to(flow.Tensor).is_contiguous()  # nothing changes before the first call
    x = flow.tensor(x0).transpose(0, 1)  # (2, 4), strides (1, 2)
    assert not x.is_contiguous()
    losses = [graph(x).numpy() for _ in range(2)]
    assert w.is_contiguous() and w.stride() == (3, 1)
    assert x.is_contiguous() and x.stride() == (4, 1)
    assert bias.is_contiguous() and bias.stride() == (3, 1)
    # numpy reference: loss = sum(x @ W + b); dW = x^T @ ones
    W, X = w0.T.copy(), x0.T.copy()
    want = []
    for _ in range(2):
        want.append((X @ W + bias0).sum())
        W = W - np.float32(0.1) * (X.T @ np.ones((2, 3), np.float32))
    np.testing.assert_allclose(np.array(losses, np.float32), np.array(want, np.float32), rtol=1e-6)
    np.testing.assert_allclose(w.numpy(), W, rtol=1e-6)
    np.testing.assert_array_equal(bias.numpy(), bias0)
    np.testing.assert_array_equal(x.numpy(), x0.T)


def test_contiguous_and_non_contiguous_graphs_agree():
    # OneFlow 0.9's python/oneflow/test/graph/test_graph_non_contiguous_tensors.py, restated
    inp = flow.tensor([[1, 2, 3], [4, 5, 6], [3, 3, 3], [7, 8, 8]], dtype=flow.float32)
    outs = []
    for contiguous in (True, False):
        m = flow.nn.Module()
        m.weight = flow.nn.Parameter(flow.ones(4, 3) if contiguous else flow.ones(3, 4).transpose(0, 1))
        g = _graph(m, lambda g, x: flow.matmul(x, g.m.weight))
        x = inp.transpose(0, 1)
        outs.append(g(x.contiguous() if contiguous else x).numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], inp.numpy().T @ np.ones((4, 3), np.float32))
