"""`flow.default_generator` is the CPU Generator object (OneFlow 0.9), and generator device tags are checked."""
import numpy as np
import pytest

import oneflow_compat as flow


def test_default_generator_is_the_generator_object():
    g = flow.default_generator
    assert isinstance(g, flow.Generator)
    assert g.manual_seed(7) is g
    assert g.initial_seed() == 7 == flow.initial_seed()
    a = flow.randn(5)
    g.manual_seed(7)
    np.testing.assert_array_equal(a.numpy(), flow.randn(5).numpy())
    flow.manual_seed(9)  # flow.manual_seed seeds the same object
    assert flow.default_generator.initial_seed() == 9


def test_default_generator_state_round_trip():
    g = flow.default_generator
    g.manual_seed(3)
    state = g.get_state()
    a = flow.rand(4)
    g.set_state(state)
    np.testing.assert_array_equal(a.numpy(), flow.rand(4).numpy())


@pytest.mark.parametrize("tag", ["invalid", "cuda:x", "gpu"])
def test_generator_refuses_an_unknown_device_tag(tag):
    with pytest.raises(RuntimeError, match="Generator: invalid device '%s'" % tag):
        flow.Generator(device=tag)


@pytest.mark.parametrize("tag,expect", [(None, "auto"), ("auto", "auto"), ("cpu:1000", "cpu:1000")])
def test_generator_device_tags_accepted(tag, expect):
    assert flow.Generator(device=tag).device == expect
