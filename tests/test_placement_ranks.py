"""`flow.placement` as OneFlow 0.9 shows it: `.ranks` is an int64 numpy array shaped like the hierarchy
(placement_symbol.cpp GetPlacementRanks @ v0.9.0), `.hierarchy` an oneflow.Size, the repr of
tensor_attributes.py's docstring, equality by (type, ranks, hierarchy), construction from an ndarray, the 0.5-0.8
spellings, and OneFlow's error for ranks that are not an integer array. The package itself reads the flat
`rank_list`: no op builds the array."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat._global import placement as placement_module


def test_ranks_is_an_int64_ndarray_shaped_like_the_hierarchy():
    mesh = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    r = mesh.ranks
    assert isinstance(r, np.ndarray) and r.dtype == np.int64 and r.shape == (2, 2)
    np.testing.assert_array_equal(r, np.array([[0, 1], [2, 3]]))
    line = flow.placement("cpu", ranks=[0, 1, 2, 3])
    assert line.ranks.shape == (4,) and line.ranks.dtype == np.int64 and line.ranks.tolist() == [0, 1, 2, 3]
    cube = flow.placement("cuda", ranks=[[[0, 1], [2, 3]], [[4, 5], [6, 7]]])
    assert cube.ranks.shape == (2, 2, 2) and cube.ranks[1, 0, 1] == 5
    # one int: OneFlow's hierarchy is then [1]
    one = flow.placement("cpu", 0)
    assert one.ranks.shape == (1,) and one.ranks.tolist() == [0] and tuple(one.hierarchy) == (1,)
    # the mesh is the sorted ranks laid out in the hierarchy (ParallelDesc sorts them)
    assert flow.placement("cpu", [[3, 1], [2, 0]]).ranks.tolist() == [[0, 1], [2, 3]]


def test_ranks_is_a_fresh_array_each_time():
    p = flow.placement("cpu", [0, 1])
    a = p.ranks
    a[0] = 7
    assert p.ranks.tolist() == [0, 1] and p.ranks is not p.ranks


def test_hierarchy_type_device_type_and_repr():
    mesh = flow.placement(type="cuda", ranks=[[0, 1], [2, 3]])
    assert isinstance(mesh.hierarchy, flow.Size) and repr(mesh.hierarchy) == "oneflow.Size([2, 2])"
    assert mesh.hierarchy == mesh.ranks.shape
    assert mesh.type == mesh.device_type == "cuda"
    # tensor_attributes.py @ v0.9.0: the reprs its docstring shows
    assert repr(flow.placement(type="cuda", ranks=[0, 1, 2, 3])) == 'oneflow.placement(type="cuda", ranks=[0, 1, 2, 3])'
    assert repr(mesh) == str(mesh) == 'oneflow.placement(type="cuda", ranks=[[0, 1], [2, 3]])'
    assert repr(flow.placement(type="cpu", ranks=[0, 1])) == 'oneflow.placement(type="cpu", ranks=[0, 1])'


def test_construction_from_an_ndarray_and_equality():
    mesh = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    from_array = flow.placement("cpu", np.array([[0, 1], [2, 3]], dtype=np.int64))
    assert from_array == mesh and hash(from_array) == hash(mesh)
    assert flow.placement("cpu", mesh.ranks) == mesh  # the round trip a 0.9 script does
    assert flow.placement("cpu", np.arange(4)) == flow.placement("cpu", [0, 1, 2, 3])
    assert flow.placement("cpu", np.arange(4).reshape(2, 2)) == mesh
    # same ranks, another hierarchy or type: another placement
    assert mesh != flow.placement("cpu", [0, 1, 2, 3]) and mesh != flow.placement("cpu", [[0], [1], [2], [3]])
    assert mesh != flow.placement("cuda", [[0, 1], [2, 3]])
    assert len({mesh, from_array, flow.placement("cpu", [0, 1, 2, 3])}) == 2


def test_the_legacy_spellings_keep_working():
    a = flow.placement("cuda", [0, 1])
    assert flow.placement(type="cuda", ranks=[0, 1]) == a
    assert flow.placement("cuda", {0: [0, 1]}) == a  # 0.5: node id -> local devices
    assert flow.placement("cuda", {0: range(2)}) == a
    assert flow.placement(device_type="cuda", ranks=(1, 0)) == a
    assert flow.placement("cuda", range(2)) == a
    nd = flow.placement("cpu", {0: [0, 1, 2, 3]}, (2, 2))  # 0.5/0.6: the hierarchy as a third argument
    assert nd.ranks.tolist() == [[0, 1], [2, 3]] and nd == flow.placement("cpu", [[0, 1], [2, 3]])


def test_placement_all_is_every_rank_of_the_world():
    p = flow.placement.all("cpu")
    assert p == flow.placement("cpu", [0]) and p.ranks.dtype == np.int64 and p.ranks.tolist() == [0]
    assert repr(flow.placement.all("cuda")) == 'oneflow.placement(type="cuda", ranks=[0])'
    assert flow.env.all_device_placement("cpu") == p


@pytest.mark.parametrize("bad, detail", [
    ([0.5, 1.5], "an array of float64"),
    ("01", "an array of <U2"),
    ([True, False], "an array of bool"),
    ([], "an array of float64"),
    ([[0, 1], [2]], "nested ranks are not rectangular"),
])
def test_ranks_that_are_not_an_integer_array_are_refused_with_oneflows_message(bad, detail):
    # placement_symbol.cpp @ v0.9.0: "placement ranks shoule be an array of long int" (its spelling), a RuntimeError
    with pytest.raises(RuntimeError) as info:
        flow.placement("cpu", bad)
    assert str(info.value) == "flow.placement: placement ranks shoule be an array of long int, got %r (%s)" % (
        bad, detail)
    assert isinstance(info.value, ValueError)  # as 0.5-0.8 scripts catch it


def test_the_runtime_reads_the_flat_rank_list_not_the_array(monkeypatch):
    p = flow.placement("cpu", [0])
    assert p.rank_list == (0,) and isinstance(p.rank_list, tuple)
    mesh = flow.placement("cpu", [[0]])

    def no_array(self):
        raise AssertionError("the package built placement.ranks")

    monkeypatch.setattr(placement_module.placement, "ranks", property(no_array))
    x = flow.randn(4, 3, placement=p, sbp=flow.sbp.split(0), requires_grad=True)
    y = (x * 2).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((4, 3), 2.0))
    z = x.to_global(placement=mesh, sbp=(flow.sbp.broadcast, flow.sbp.split(0)))
    np.testing.assert_allclose(z.numpy(), x.numpy())
    assert x.to("cuda").placement == flow.placement("cuda", [0])
    assert z.to("cuda").placement == flow.placement("cuda", [[0]])  # the mesh kept
