"""flow.save of a whole Module (OneFlow 0.9's test/modules/test_module.py test_save_load_module_directly) is
refused here by design, since flow.load never unpickles code: the refusal is a clear TypeError naming the object and
what to save instead (it was a KeyError of a tensor's id), and nothing is written."""
import os
import re

import pytest

import oneflow as flow


def test_saving_a_module_object_is_a_clear_error(tmp_path):
    target = str(tmp_path / "ckpt")
    with pytest.raises(TypeError, match=re.escape(
            "flow.save: cannot save 'Linear': a tensor is held by an object of another type than dict, list or tuple; "
            "save plain containers of tensors, e.g. a Module's state_dict() (flow.load never unpickles code)")):
        flow.save(flow.nn.Linear(2, 3), target)
    assert not os.path.exists(target)
    m = flow.nn.Linear(2, 3)
    flow.save({"model": m.state_dict(), "step": 3}, target)  # plain containers still save and load
    back = flow.load(target)
    assert back["step"] == 3
    assert (back["model"]["weight"].numpy() == m.weight.numpy()).all()
