"""nn.Module / nn.Parameter / flow.load behaviours OneFlow 0.9 has (facts from its v0.9.0 sources, cited per test)."""
import os

import numpy as np
import pytest

import oneflow as flow


def test_an_integer_parameter_is_made_and_does_not_require_grad():
    # v0.9.0 core/framework/tensor.h: Parameter's constructor ignores the failed set_requires_grad check
    p = flow.nn.Parameter(flow.tensor([[1, 2], [3, 4]], dtype=flow.int32))
    assert isinstance(p, flow.nn.Parameter) and p.dtype == flow.int32
    assert not p.requires_grad and p.is_leaf
    np.testing.assert_array_equal(p.numpy(), [[1, 2], [3, 4]])
    assert flow.nn.Parameter(flow.ones(2)).requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point can require gradients"):
        flow.ones(2, dtype=flow.int64).requires_grad_()


def test_module_with_an_integer_parameter_moves_and_computes():
    class M(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = flow.nn.Parameter(flow.full((2, 3), 1.5))
            self.n = flow.nn.Parameter(flow.full((2, 3), 2.0).to(flow.int32))

        def forward(self, x):
            return self.w * x

    m = M().to("cuda")
    assert m.n.device == flow.device("cuda") and m.n.dtype == flow.int32 and not m.n.requires_grad
    assert m.w.requires_grad and m.w.is_leaf
    np.testing.assert_allclose(m(flow.ones(2, 3, device="cuda")).numpy(), np.full((2, 3), 1.5))
    m.to(flow.float64)
    assert m.w.dtype == flow.float64


def test_load_reads_a_file_written_by_torch_save(tmp_path):
    torch = pytest.importorskip("torch")
    conv = torch.nn.Conv2d(3, 2, 3)
    path = os.path.join(str(tmp_path), "weights.pt")
    torch.save({"model": conv.state_dict(), "step": 7, "pair": (torch.ones(2), 3)}, path)
    loaded = flow.load(path)
    assert loaded["step"] == 7 and loaded["pair"][1] == 3
    assert isinstance(loaded["pair"][0], flow.Tensor)
    m = flow.nn.Conv2d(3, 2, 3)
    m.load_state_dict(loaded["model"])
    np.testing.assert_array_equal(m.weight.numpy(), conv.weight.detach().numpy())
    np.testing.assert_array_equal(m.bias.numpy(), conv.bias.detach().numpy())
    moved = flow.load(path, map_location=flow.device("cuda:0"))
    assert moved["model"]["weight"].device == flow.device("cuda:0")
    np.testing.assert_array_equal(moved["model"]["weight"].numpy(), conv.weight.detach().numpy())


def test_sysconfig_get_cuda_version_is_0_without_cuda():
    v = flow.sysconfig.get_cuda_version()
    assert isinstance(v, int)
    assert (v == 0) == (not flow.sysconfig.with_cuda())


def test_boxing_settings_check_their_type_and_are_recorded():
    # python/oneflow/boxing/ and framework/config_util.py (v0.9.0): names, resource paths, type assertions
    import oneflow.boxing.nccl as nccl

    assert nccl is flow.boxing.nccl
    nccl.enable_use_compute_stream(False)
    nccl.set_stream_num(2)
    nccl.allow_fuse_all_reduce(True)
    flow.boxing.enable_fusion(True)
    got = flow.boxing.settings()
    assert got["nccl_use_compute_stream"] is False
    assert got["collective_boxing_conf.nccl_num_streams"] == 2
    assert got["collective_boxing_conf.nccl_fusion_all_reduce"] is True
    assert got["collective_boxing_conf.enable_fusion"] is True
    with pytest.raises(AssertionError) as e:
        nccl.set_fusion_threshold_mbytes("16")
    assert str(e.value) == ("Attribute ['collective_boxing_conf', 'nccl_fusion_threshold_mb'] type unmatched! "
                            "Expected: <class 'int'> but get: <class 'str'>")


def test_nn_graph_util_args_tree():
    # python/oneflow/nn/graph/util.py (v0.9.0): depth-first nodes, mapped leaves, names "prefix_name"
    from oneflow.nn.graph.util import ArgsTree, NamedArg

    t = flow.ones(2)
    assert list(ArgsTree([1, [2, 3], {"k": 4}]).iter_nodes()) == [[1, [2, 3], {"k": 4}], 1, [2, 3], 2, 3, {"k": 4}, 4]
    mapped = ArgsTree(((t, 1), {"a": t, "b": [2, None]})).map_leaf(lambda x: "T" if isinstance(x, flow.Tensor) else x)
    assert mapped == (("T", 1), {"a": "T", "b": [2, None]})
    tree = ArgsTree(((t, 1), {"a": t, "b": [2, None]}), gen_name=True, root_prefix="in")
    names = [n for n, _ in tree.iter_named_nodes()]
    assert names == ["in_0", "in.0_1", "in.0.0_2", "in.0.1_3", "in.1_4", "in.1.0_a", "in.1.1_b", "in.1.1.0_7",
                     "in.1.1.1_8"]
    nodes = dict(tree.iter_named_nodes())
    assert isinstance(nodes["in.1.0_a"], NamedArg) and nodes["in.1.0_a"].value() is t and nodes["in.1.0_a"].is_leaf()
    assert not nodes["in.1.1_b"].is_leaf()
    with pytest.raises(AssertionError, match="Only use this if gen_name is set!"):
        list(ArgsTree([1]).iter_named_nodes())


def test_tensor_equal_to_none_is_false():
    # api/python/framework/tensor_functions.cpp tp_richcompare
    a, b = flow.randn(3), flow.randn(3)
    assert (a == None) is False  # noqa: E711
    assert (None in [a, b]) is False and (None in [a, b, None]) is True
    np.testing.assert_array_equal((a == a).numpy(), [True, True, True])


def test_tensor_buffer_shapes_and_dtypes():
    # api/python/utils/tensor_utils.cpp MaybeGetTensorBufferShapesAndDTypes
    t = flow.tensor_to_tensor_buffer(flow.ones(2, 3, 4), instance_dims=2)
    shapes, dts = t._tensor_buffer_shapes_and_dtypes
    assert shapes == [(3, 4), (3, 4)] and dts == [flow.float32, flow.float32]
    with pytest.raises(RuntimeError, match="^tensor buffer supported only$"):
        flow.ones(2)._tensor_buffer_shapes_and_dtypes


def test_deepcopy_and_pickle_follow_oneflows_tensor_getstate():
    # framework/check_point_v2.py tensor_getstate (v0.9.0): data, dtype, device; a Parameter stays a Parameter
    import copy
    import pickle

    m = flow.nn.Linear(2, 2)
    m2 = copy.deepcopy(m)
    assert isinstance(m2.weight, flow.nn.Parameter) and m2.weight.requires_grad and m2.weight is not m.weight
    np.testing.assert_array_equal(m2.weight.numpy(), m.weight.numpy())
    y = flow.ones(2, requires_grad=True) * 2
    z = copy.deepcopy(y)
    assert not z.requires_grad and z.is_leaf
    z.add_(1)  # a new leaf that needs no grad: in-place is fine
    np.testing.assert_array_equal(z.numpy(), [3.0, 3.0])
    assert isinstance(pickle.loads(pickle.dumps(flow.nn.Parameter(flow.ones(1)))), flow.nn.Parameter)
