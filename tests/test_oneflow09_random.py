"""flow.Generator and flow.default_generator as OneFlow 0.9 has them (v0.9.0 oneflow/core/framework/
random_generator.cpp, python/oneflow/framework/generator.py)."""
import numpy as np
import pytest

import oneflow as flow


def test_a_new_generator_starts_at_oneflows_default_seed():
    for device in ("auto", "cpu", "cuda", "cpu:1000"):
        assert flow.Generator(device).initial_seed() == 67280421310721
    assert flow.Generator().initial_seed() == 67280421310721


def test_generators_of_one_seed_draw_the_same_numbers():
    a = flow.randn(3, 4, generator=flow.Generator("cpu"))
    b = flow.randn(3, 4, generator=flow.Generator("auto"))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_generator_of_an_invalid_device_is_refused():
    with pytest.raises(RuntimeError) as e:
        flow.Generator(device="invalid")
    assert str(e.value).startswith("Invalid device invalid for making generator, please make sure the device is "
                                   "one of cpu, cuda, auto")


def test_seed_draws_a_fresh_seed_and_sets_it():
    g = flow.Generator("cpu")
    seeds = {g.seed() for _ in range(4)}
    assert len(seeds) > 1  # 53-bit random draws
    s = g.seed()
    assert g.initial_seed() == s and 0 <= s < 2 ** 53
    g.manual_seed(2)
    assert g.initial_seed() == 2


def test_default_generator_is_the_cpu_generator_object():
    g = flow.default_generator
    assert not callable(g)
    g.manual_seed(5)
    assert g.initial_seed() == 5 and flow.initial_seed() == 5
    state = g.get_state()
    x = flow.randn(4)
    g.set_state(state)
    np.testing.assert_array_equal(flow.randn(4).numpy(), x.numpy())
    assert g.seed() == flow.initial_seed()
