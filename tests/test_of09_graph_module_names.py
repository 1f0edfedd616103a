"""`graph.m.layer.conv1.to(nn.graph.GraphModule)`: OneFlow 0.9's GraphBlock.name is the attribute name ("conv1"),
name_prefix the parents' path ("m.layer."), type "MODULE" (nn/graph/graph_block.py:30-67@v0.9.0;
test/graph/test_graph.py test_add_nested_module). `name` gave the whole path here."""
import oneflow as flow
from oneflow.nn.graph import GraphModule


class _Inner(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = flow.nn.Conv2d(1, 1, 1)


class _Outer(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = _Inner()


class _G(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.m = _Outer()

    def build(self, x):
        return self.m.layer.conv1(x)


def test_names_prefixes_and_type_of_nested_graph_modules():
    g = _G()
    top, inner, leaf = (g.m.to(GraphModule), g.m.layer.to(GraphModule), g.m.layer.conv1.to(GraphModule))
    assert (top.name, top.name_prefix, top.type) == ("m", "", "MODULE")
    assert (inner.name, inner.name_prefix) == ("layer", "m.")
    assert (leaf.name, leaf.name_prefix, leaf.type) == ("conv1", "m.layer.", "MODULE")
    assert leaf.stage_id is None and leaf.stage_placement is None
    p = flow.placement("cpu", [0])
    leaf.set_stage(0, p)
    assert leaf.stage_id == 0 and leaf.stage_placement == p


def test_a_module_called_in_build_but_not_registered_warns_with_0_9s_words():
    """OneFlow 0.9's Module.__call__ in lazy mode (nn/modules/module.py:150-155@v0.9.0; test/graph/
    test_graph_block.py test_block_with_not_registered_module): the module runs, with one warning naming it."""
    import warnings

    import numpy as np

    lin = flow.nn.Linear(3, 2)
    holder = {"lin": lin}

    class G(flow.nn.Graph):
        def __init__(self, registered):
            super().__init__()
            if registered:
                self.lin = lin

        def build(self, x):
            return holder["lin"](x)

    x = np.ones((4, 3), np.float32)
    want = x @ lin.weight.numpy().T + lin.bias.numpy()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = G(registered=False)(flow.tensor(x))
    msgs = [str(m.message) for m in w if "nn.Graph" in str(m.message)]
    assert msgs == ["Linear(in_features=3, out_features=2, bias=True) is called in a nn.Graph, but not registered "
                    "into a nn.Graph."]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        G(registered=True)(flow.tensor(x))
    assert not [m for m in w if "nn.Graph" in str(m.message)]


def test_module_to_graph_module_inside_its_forward():
    """OneFlow 0.9 calls a registered module's forward through its proxy, so `self.to(nn.graph.GraphModule)` works
    there (test/graph/test_graph_block.py test_module_has_special_attr); outside a build it is refused."""
    import numpy as np
    import pytest

    seen = []

    class M(flow.nn.Module):
        def forward(self, x):
            seen.append((self.to(GraphModule).name, self.to(GraphModule).name_prefix))
            return x * 2

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.outer = flow.nn.Sequential(M())

        def build(self, x):
            return self.outer(x)

    out = G()(flow.ones(2))
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0])
    assert seen == [("0", "outer.")]
    with pytest.raises(ValueError, match="Unsupported parameters in module.to"):
        M().to(GraphModule)
