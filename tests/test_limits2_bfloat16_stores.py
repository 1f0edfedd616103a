"""Writes into a bfloat16 tensor's storage from outside an op (load_state_dict, copy_, item assignment, fill_)
store bfloat16 numbers, rounded to nearest with ties to even as every op output of that dtype is: a bfloat16
tensor never holds a float32 value it could not hold in OneFlow. Expected values by hand: in [1, 2) bfloat16 numbers
are 2^-7 apart; 0.1 is 0x3DCD = 0.10009765625, 0.3 is 0x3E9A = 0.30078125."""
import numpy as np

import oneflow_compat as flow

TIE_DOWN = 1 + 2 ** -8  # halfway between 1 (even) and 1 + 2^-7: to 1
TIE_UP = 1 + 3 * 2 ** -8  # halfway between 1 + 2^-7 (odd) and 1 + 2^-6: to 1 + 2^-6
BF_01, BF_03 = 0.10009765625, 0.30078125


def test_load_state_dict_into_bfloat16_parameters():
    lin = flow.nn.Linear(2, 2).to(flow.bfloat16)
    lin.load_state_dict({"weight": flow.tensor(np.array([[TIE_DOWN, TIE_UP], [0.1, 0.3]], np.float32)),
                         "bias": flow.tensor(np.array([0.1, -TIE_UP], np.float32))})
    assert lin.weight.dtype == flow.bfloat16
    np.testing.assert_array_equal(lin.weight.numpy(), np.array([[1.0, 1 + 2 ** -6], [BF_01, BF_03]], np.float32))
    np.testing.assert_array_equal(lin.bias.numpy(), np.array([BF_01, -(1 + 2 ** -6)], np.float32))


def test_copy_():
    w = flow.tensor([0.0, 0.0, 0.0], dtype=flow.bfloat16)
    w.copy_(flow.tensor([TIE_DOWN, TIE_UP, 0.1]))
    np.testing.assert_array_equal(w.numpy(), np.array([1.0, 1 + 2 ** -6, BF_01], np.float32))


def test_item_assignment():
    m = flow.tensor(np.zeros((2, 3)), dtype=flow.bfloat16)
    m[0, 0] = TIE_UP
    m[:, 1] = flow.tensor([0.1, 0.3])
    m[1, 2] = np.float64(TIE_DOWN)
    np.testing.assert_array_equal(m.numpy(), np.array([[1 + 2 ** -6, BF_01, 0], [0, BF_03, 1.0]], np.float32))


def test_fill_():
    w = flow.tensor([0.0, 0.0], dtype=flow.bfloat16)
    w.fill_(0.1)
    np.testing.assert_array_equal(w.numpy(), np.array([BF_01, BF_01], np.float32))
    w.fill_(TIE_UP)
    np.testing.assert_array_equal(w.numpy(), np.array([1 + 2 ** -6] * 2, np.float32))
    f = flow.tensor([0.0], dtype=flow.float32)
    f.fill_(0.1)  # (float32 keeps its own rounding)
    assert f.numpy()[0] == np.float32(0.1)


def test_nn_init_fills_bfloat16_numbers():
    from test_limits2_bfloat16_updates import _bf16, _representable  # (the independent rounding reference)

    w = flow.tensor(np.zeros((3, 4)), dtype=flow.bfloat16)
    flow.nn.init.constant_(w, 0.1)
    np.testing.assert_array_equal(w.numpy(), np.full((3, 4), BF_01, np.float32))
    f = flow.tensor(np.zeros((3, 4)), dtype=flow.float32)
    for name in ("normal_", "uniform_", "xavier_uniform_", "kaiming_normal_", "trunc_normal_", "orthogonal_"):
        flow.manual_seed(5)
        getattr(flow.nn.init, name)(f)
        flow.manual_seed(5)
        getattr(flow.nn.init, name)(w)
        assert not _representable(f.numpy()), name  # (the float32 draw is not bfloat16 already)
        np.testing.assert_array_equal(w.numpy(), _bf16(f.numpy()), err_msg=name)
    assert _representable(flow.nn.Linear(3, 4, dtype=flow.bfloat16).weight.numpy())
