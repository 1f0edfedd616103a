"""`flow.visualize_sharding`: the blocks each rank holds (1-D and n-D placements, split/broadcast/partial_sum),
checked against numpy's balanced split and the runtime's own slicing rule, and the terminal drawing."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat._global import sharding_view
from oneflow_compat.ir import sbp as S

S0, S1, B, P = flow.sbp.split(0), flow.sbp.split(1), flow.sbp.broadcast, flow.sbp.partial_sum


def _numpy_ranges(n, k):
    """The balanced pieces as numpy cuts them (np.array_split: the first n % k pieces one longer)."""
    pieces = np.array_split(np.arange(n), k)
    return [(int(p[0]), int(p[-1]) + 1) if len(p) else None for p in pieces]


@pytest.mark.parametrize("n, k", [(10, 4), (4, 4), (3, 4), (7, 2), (1, 3)])
def test_one_axis_split_matches_numpy_and_the_runtime(n, k):
    pl = flow.placement("cpu", list(range(k)))
    blocks = {tuple(holders): ranges for ranges, holders, _ in sharding_view.sharding_blocks((n, 5), pl, S0)}
    for r, expected in enumerate(_numpy_ranges(n, k)):
        ranges = blocks[(r,)]
        if expected is None:
            assert ranges[0][1] - ranges[0][0] == 0
        else:
            assert ranges[0] == expected
        assert ranges[1] == (0, 5)
        # the runtime's slicing rule (ir/sbp.py) gives the same piece
        assert S.local_slices((n, 5), S.S(0), r, k)[0] == slice(*ranges[0])


def test_two_d_mesh_splits_each_axis_in_turn():
    mesh = flow.placement("cuda", [[0, 1], [2, 3]])
    blocks = sharding_view.sharding_blocks((4, 6), mesh, (S0, S1))
    assert [(r, h) for r, h, _ in blocks] == [
        (((0, 2), (0, 3)), [0]), (((0, 2), (3, 6)), [1]), (((2, 4), (0, 3)), [2]), (((2, 4), (3, 6)), [3])]
    # the same dim split by both axes: halves, then each half in two (5 rows: 3 + 2, then 2 + 1 and 1 + 1)
    nested = sharding_view.sharding_blocks((5, 2), mesh, (S0, S0))
    assert [(r[0], h) for r, h, _ in nested] == [((0, 2), [0]), ((2, 3), [1]), ((3, 4), [2]), ((4, 5), [3])]


def test_broadcast_and_partial_sum_blocks_are_held_by_several_ranks():
    mesh = flow.placement("cpu", [[0, 1], [2, 3]])
    copies = sharding_view.sharding_blocks((4, 6), mesh, (B, S1))
    assert [(r, h, p) for r, h, p in copies] == [(((0, 4), (0, 3)), [0, 2], ()), (((0, 4), (3, 6)), [1, 3], ())]
    addends = sharding_view.sharding_blocks((4, 6), mesh, (P, S1))
    assert [(h, p) for _, h, p in addends] == [([0, 2], (0,)), ([1, 3], (0,))]
    whole = sharding_view.sharding_blocks((3,), flow.placement("cpu", [0, 1, 2]), B)
    assert whole == [(((0, 3),), [0, 1, 2], ())]


def test_every_element_is_in_exactly_one_block_on_a_three_d_mesh():
    mesh = flow.placement("cpu", [[[0, 1], [2, 3]], [[4, 5], [6, 7]]])
    shape = (5, 7, 3)
    blocks = sharding_view.sharding_blocks(shape, mesh, (S0, S1, flow.sbp.split(2)))
    owner = np.full(shape, -1)
    for ranges, holders, _ in blocks:
        assert len(holders) == 1
        region = tuple(slice(a, b) for a, b in ranges)
        assert (owner[region] == -1).all()
        owner[region] = holders[0]
    assert (owner >= 0).all() and sorted(np.unique(owner)) == list(range(8))


def test_drawing_of_a_split_tensor():
    text = sharding_view.sharding_text((10, 6), flow.placement("cpu", [0, 1, 2, 3]), S0)
    assert text == "\n".join([
        "(10, 6) on cpu ranks [0, 1, 2, 3], sbp (oneflow.sbp.split(dim=0),)",
        "            \u250c\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2510",
        "dim 0: 0-2  \u2502 rank 0 \u2502",
        "            \u251c\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2524",
        "       3-5  \u2502 rank 1 \u2502",
        "            \u251c\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2524",
        "       6-7  \u2502 rank 2 \u2502",
        "            \u251c\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2524",
        "       8-9  \u2502 rank 3 \u2502",
        "            \u2514\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2518"])


def test_drawing_of_a_two_d_mesh_with_partial_sums():
    text = sharding_view.sharding_text((4, 6), flow.placement("cuda", [[0, 1], [2, 3]]), (P, S1))
    lines = text.splitlines()
    assert lines[0] == ("(4, 6) on cuda ranks [[0, 1], [2, 3]] (mesh 2 x 2), sbp (oneflow.sbp.partial_sum, "
                        "oneflow.sbp.split(dim=1))")
    assert lines[1].strip() == "dim 1:" and lines[2].split() == ["0-2", "3-5"]
    assert lines[4].strip() == "\u2502 \u03a3 ranks 0, 2 \u2502 \u03a3 ranks 1, 3 \u2502"
    assert lines[-1] == "\u03a3: partial_sum over mesh axis 0: those ranks hold addends whose sum is the block"


def test_a_global_tensor_prints_once_with_its_dtype(capsys, monkeypatch):
    x = flow.randn(4, 6, placement=flow.placement("cpu", [0]), sbp=S0)
    flow.visualize_sharding(x)
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "(4, 6) float32 on cpu ranks [0], sbp (oneflow.sbp.split(dim=0),)"
    assert "\u2502 rank 0 \u2502" in out
    from oneflow_compat.comm import world

    monkeypatch.setattr(world, "job_rank", lambda: 1)  # another rank of the job: prints nothing
    flow.visualize_sharding(x)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("args, error, message", [
    (((4, 6), flow.placement("cpu", [[0, 1], [2, 3]]), S0), ValueError, "1 sbp for a placement of 2 mesh axes"),
    (((4,), flow.placement("cpu", [0, 1]), S1), ValueError, "splits dim 1 of a 1-d tensor"),
    (((4,), None, None), TypeError, "a shape needs a placement and an sbp"),
    (("x", None, None), TypeError, "takes a global tensor or a shape"),
])
def test_bad_layouts_are_named(args, error, message):
    with pytest.raises(error, match=message):
        sharding_view.sharding_text(*args)


def test_a_local_tensor_is_refused():
    with pytest.raises(ValueError, match="the tensor is local"):
        flow.visualize_sharding(flow.ones(2, 3))


def test_ranks_with_empty_pieces_are_named_not_drawn_as_copies():
    text = sharding_view.sharding_text((2, 3), flow.placement("cpu", [0, 1, 2, 3]), S0)
    assert text.count("\u2502 rank") == 2 and "ranks 2, 3" not in text.splitlines()[3]
    assert text.splitlines()[-1] == "ranks 2, 3: an empty piece (fewer elements than pieces)"
