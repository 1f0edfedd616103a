"""`flow.save` of state dicts and conversions (issue 21, part 6): a path under a file is a clear error and writes
nothing; an optimizer created before `module.to_global(...)` warns at `step()` naming the replaced parameters
(OneFlow 0.9 replaces them silently)."""
import os
import warnings

import numpy as np
import pytest

import oneflow_compat as flow


def test_save_under_a_file_is_a_clear_error(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    m = flow.nn.Linear(2, 3)
    with pytest.raises(NotADirectoryError, match=r"flow.save: cannot save to '.*afile/model': '.*afile' is a "
                                                 r"file, not a directory"):
        flow.save(m.state_dict(), str(blocker / "model"))
    with pytest.raises(NotADirectoryError, match="is a file, not a directory"):
        flow.save(m.state_dict(), str(blocker / "deeper" / "model"))
    assert sorted(os.listdir(tmp_path)) == ["afile"]  # nothing half-written beside it


def test_save_then_load_round_trip(tmp_path):
    m = flow.nn.Linear(2, 3)
    flow.save(m.state_dict(), str(tmp_path / "model"))
    flow.save(m.state_dict(), str(tmp_path / "model"))  # replacing an earlier save
    loaded = flow.load(str(tmp_path / "model"))
    np.testing.assert_array_equal(loaded["weight"].numpy(), m.weight.numpy())
    assert sorted(os.listdir(tmp_path)) == ["model"]


def test_optimizer_created_before_to_global_warns_at_step():
    m = flow.nn.Linear(2, 3)
    opt = flow.optim.SGD(m.parameters(), lr=0.1)
    p = flow.placement("cpu", ranks=[0])
    m.to_global(p, flow.sbp.broadcast)
    m(flow.ones(1, 2).to_global(p, flow.sbp.broadcast)).sum().backward()
    with pytest.warns(UserWarning, match=r"SGD.step\(\): parameter 'weight' of Linear, parameter 'bias' of Linear "
                                         r"were replaced by a local <-> global conversion"):
        opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()  # once per optimizer
        good = flow.optim.SGD(m.parameters(), lr=0.1)  # created after: no warning, and it trains
        before = m.weight.numpy().copy()
        good.step()
    assert not np.array_equal(before, m.weight.numpy())
