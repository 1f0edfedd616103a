"""Small compatibility points OneFlow 0.9's own module tests rely on: `oneflow.nn.parameter.Parameter`, and the
`fused=` keyword of SGD / Adam (a scheduling choice in OneFlow 0.9: the updates are the same numbers)."""
import numpy as np

import oneflow as flow


def test_nn_parameter_module_is_nn_parameter():
    from oneflow.nn.parameter import Parameter

    assert Parameter is flow.nn.Parameter
    p = Parameter(flow.tensor([1.0, 2.0]))
    assert p.requires_grad


def _step(opt_cls, **kw):
    w = flow.nn.Parameter(flow.tensor(np.array([1.0, -2.0, 3.0], np.float32)))
    opt = opt_cls([w], lr=0.1, **kw)
    (w * w).sum().backward()
    opt.step()
    return w.numpy()


def test_sgd_and_adam_accept_fused_with_the_same_numbers():
    g = 2 * np.array([1.0, -2.0, 3.0], np.float32)
    np.testing.assert_allclose(_step(flow.optim.SGD, fused=True), np.array([1.0, -2.0, 3.0]) - 0.1 * g, rtol=1e-6)
    np.testing.assert_allclose(_step(flow.optim.SGD, fused=True, momentum=0.9), _step(flow.optim.SGD, momentum=0.9))
    # Adam's first step moves each weight by lr * sign(g) (bias-corrected m / sqrt(v))
    np.testing.assert_allclose(_step(flow.optim.Adam, fused=True), np.array([1.0, -2.0, 3.0]) - 0.1 * np.sign(g),
                               rtol=1e-5)
    assert flow.optim.Adam([flow.nn.Parameter(flow.zeros(2))], fused=True).param_groups[0]["fused"] is True


def test_every_dtype_survives_copy_and_pickle():
    """OneFlow 0.9's autotest deep-copies argument dicts holding dtypes: flow.bool (defined above the ir layer)
    must come back as itself, as the legacy ones do."""
    import copy
    import pickle

    for dt in (flow.bool, flow.float32, flow.int64, flow.float16):
        assert copy.deepcopy(dt) is dt
        assert pickle.loads(pickle.dumps(dt)) is dt
    assert copy.deepcopy({"dtype": flow.bool})["dtype"] is flow.bool


def test_every_sbp_symbol_is_callable_and_returns_itself():
    assert flow.sbp.split(1)() is flow.sbp.split(1)
    assert flow.sbp.split(0)() == flow.sbp.split(0) != flow.sbp.split(1)()
    assert flow.sbp.broadcast() is flow.sbp.broadcast and flow.sbp.partial_sum() is flow.sbp.partial_sum


def test_masked_select_takes_a_mask_of_any_dtype_as_non_zero():
    x = flow.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    out = flow.masked_select(x, flow.tensor([[0.0, 0.5, 0.0], [2.0, 0.0, -1.0]]))
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0, 6.0])
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 1, 0], [1, 0, 1]])
    np.testing.assert_allclose(x.masked_select(flow.tensor([1, 0, 1])).numpy(), [1.0, 3.0, 4.0, 6.0])


def test_nn_common_types_aliases():
    from typing import Tuple, Union, get_args

    from oneflow.nn.common_types import _ratio_2_t, _size_1_t, _size_any_t, _size_2_t

    assert set(get_args(_size_2_t)) == {int, Tuple[int, int]}
    assert set(get_args(_size_1_t)) == {int, Tuple[int]}
    assert set(get_args(_size_any_t)) == {int, Tuple[int, ...]}
    assert _ratio_2_t == Union[float, Tuple[float, float]]
