"""OneFlow 0.9's recurrent layers for tensors: `flow.nn.RNN`, `LSTM`, `GRU`, the cells `RNNCell`, `LSTMCell`,
`GRUCell`, and their functional forms (`flow._C.rnn_tanh`, `rnn_relu`, `lstm`, `gru`, `rnn_tanh_cell`,
`rnn_relu_cell`, `lstm_cell`, `gru_cell`).

Every step is composed of registered ops (linear / matmul, sigmoid, tanh, relu, slices, concatenation), so the
layers differentiate, run on global tensors with whatever SBP their inputs carry, and trace into `nn.Graph` with no
op of their own. The input projection of a whole sequence is one product (x·W_ihᵀ + b_ih for every step at once);
each step then adds h·W_hhᵀ + b_hh. A `PackedSequence` (its `batch_sizes` decreasing, as packing makes them) runs
step t on the first batch_sizes[t] rows of the state: forward, the rows past a finished sequence keep its last
state; in reverse, a sequence joins with its initial state at its last element.

Formulas (gate order i, f, g, o for LSTM and r, z, n for GRU), signatures, defaults, parameter names
(weight_ih_l{k}{_reverse}, weight_hh_l…, bias_ih_l…, bias_hh_l…, weight_hr_l… for LSTM's projection), the
initialisation U(-1/√hidden_size, 1/√hidden_size) of every parameter, the checks and their messages: OneFlow
v0.9.0's python/oneflow/nn/modules/rnn.py and oneflow/core/functional/functional_api.yaml.
"""
import math
import numbers
import warnings

import numpy as np

from oneflow_compat._global import creation
from oneflow_compat._global import functional as F
from oneflow_compat._global import nn_init
from oneflow_compat._global import tensor_functions as TF
from oneflow_compat._global.dropout import dropout as _dropout
from oneflow_compat._global.modules import Module, Parameter
from oneflow_compat._global.tensor import Tensor

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# --- one step of each cell, given the input's projection gi = x·W_ihᵀ + b_ih -------------------------------------
def _simple_step(act):
    def step(gi, h, w_hh, b_hh, w_hr=None):
        return act(F.add(gi, F.linear(h, w_hh, b_hh)))
    return step


def _lstm_step(gi, hc, w_hh, b_hh, w_hr=None):
    h, c = hc
    gates = F.add(gi, F.linear(h, w_hh, b_hh))
    i, f, g, o = TF.chunk(gates, 4, 1)
    c = F.add(F.mul(F.sigmoid(f), c), F.mul(F.sigmoid(i), F.tanh(g)))
    h = F.mul(F.sigmoid(o), F.tanh(c))
    if w_hr is not None:  # LSTM with projections: h = (o ⊙ tanh c)·W_hrᵀ
        h = F.matmul(h, w_hr, transpose_b=True)
    return h, c


def _gru_step(gi, h, w_hh, b_hh, w_hr=None):
    gh = F.linear(h, w_hh, b_hh)
    r_i, z_i, n_i = TF.chunk(gi, 3, 1)
    r_h, z_h, n_h = TF.chunk(gh, 3, 1)
    r = F.sigmoid(F.add(r_i, r_h))
    z = F.sigmoid(F.add(z_i, z_h))
    n = F.tanh(F.add(n_i, F.mul(r, n_h)))
    return F.add(n, F.mul(z, F.sub(h, n)))  # (1 - z) n + z h


_STEPS = {"RNN_TANH": _simple_step(F.tanh), "RNN_RELU": _simple_step(F.relu), "LSTM": _lstm_step,
          "GRU": _gru_step}


# --- the states: a tensor, or (h, c) for LSTM ---------------------------------------------------------------------
def _rows(state, start, length):
    if isinstance(state, tuple):
        return tuple(_rows(s, start, length) for s in state)
    return TF.narrow(state, 0, start, length)


def _join(a, b):
    if isinstance(a, tuple):
        return tuple(_join(x, y) for x, y in zip(a, b))
    return F.cat([a, b], 0)


def _hidden(state):
    return state[0] if isinstance(state, tuple) else state


def _batch_sizes_list(batch_sizes):
    """The batch sizes on the host: the list packing kept beside the tensor (so that a packed sequence made inside
    nn.Graph.build, whose tensors have no value yet, still runs), else the tensor's values."""
    host = getattr(batch_sizes, "_host_sizes", None)
    if host is not None:
        return list(host)
    if isinstance(batch_sizes, Tensor):
        batch_sizes = batch_sizes.numpy()
    sizes = [int(b) for b in np.asarray(batch_sizes).reshape(-1)]
    if any(b < a for a, b in zip(sizes[1:], sizes)) or not sizes or sizes[-1] <= 0:
        raise ValueError("batch_sizes must be positive and non-increasing (as pack_padded_sequence makes them), "
                         "got %s" % sizes)
    return sizes


def _direction(mode, gi, sizes, state0, w_hh, b_hh, w_hr, reverse):
    """One direction of one layer. gi: (T, B, G) for padded input (sizes None) or (N, G) packed rows. Returns the
    outputs (T, B, H) or (N, H) and the final state."""
    step = _STEPS[mode]
    if sizes is None:
        steps = gi.shape[0]
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        state, outs = state0, [None] * steps
        for t in order:
            state = step(F.index(gi, t), state, w_hh, b_hh, w_hr)
            outs[t] = _hidden(state)
        return F.stack(outs, 0), state
    offsets = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    outs = [None] * len(sizes)
    if not reverse:
        state = state0
        for t, b in enumerate(sizes):
            batch = state[0].shape[0] if isinstance(state, tuple) else state.shape[0]
            cur = state if b == batch else _rows(state, 0, b)
            new = step(TF.narrow(gi, 0, offsets[t], b), cur, w_hh, b_hh, w_hr)
            outs[t] = _hidden(new)
            state = new if b == batch else _join(new, _rows(state, b, batch - b))
        return F.cat(outs, 0), state
    state, have = None, 0
    for t in range(len(sizes) - 1, -1, -1):
        b = sizes[t]
        if b > have:  # sequences whose last element is step t start from their initial state
            fresh = _rows(state0, have, b - have)
            state = fresh if state is None else _join(state, fresh)
            have = b
        state = step(TF.narrow(gi, 0, offsets[t], b), state, w_hh, b_hh, w_hr)
        outs[t] = _hidden(state)
    return F.cat(outs, 0), state


def _check_params(params, has_biases, num_layers, num_directions, mode):
    per = 2 + (2 if has_biases else 0)
    n = len(params)
    if n == num_layers * num_directions * (per + 1) and mode == "LSTM":
        return per + 1, True
    if n != num_layers * num_directions * per:
        raise ValueError("%s: expected %d parameters for %d layer(s), %d direction(s), has_biases=%s; got %d"
                         % (mode.lower(), num_layers * num_directions * per, num_layers, num_directions,
                            has_biases, n))
    return per, False


def _run(mode, input, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional,  # noqa: A002
         batch_first):
    """The multi-layer recurrence shared by rnn_tanh / rnn_relu / lstm / gru. Returns (output, h_n) or, for LSTM,
    (output, h_n, c_n), as OneFlow's functional does."""
    params = list(params)
    num_directions = 2 if bidirectional else 1
    stride, proj = _check_params(params, has_biases, num_layers, num_directions, mode)
    sizes = None if batch_sizes is None else _batch_sizes_list(batch_sizes)
    x = input
    if sizes is None and batch_first:
        x = F.transpose(x, 0, 1)
    lstm = mode == "LSTM"
    h0s = TF.unbind(hx[0] if lstm else hx, 0)
    c0s = TF.unbind(hx[1], 0) if lstm else None
    h_n, c_n = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(num_directions):
            k = layer * num_directions + d
            group = params[k * stride:(k + 1) * stride]
            w_ih, w_hh = group[0], group[1]
            b_ih, b_hh = (group[2], group[3]) if has_biases else (None, None)
            w_hr = group[-1] if proj else None
            gi = F.linear(x, w_ih, b_ih)
            state0 = (h0s[k], c0s[k]) if lstm else h0s[k]
            out, state = _direction(mode, gi, sizes, state0, w_hh, b_hh, w_hr, d == 1)
            outs.append(out)
            if lstm:
                h_n.append(state[0])
                c_n.append(state[1])
            else:
                h_n.append(state)
        x = outs[0] if num_directions == 1 else F.cat(outs, -1)
        if dropout > 0 and train and layer < num_layers - 1:
            x = _dropout(x, p=float(dropout), training=True)
    if sizes is None and batch_first:
        x = F.transpose(x, 0, 1)
    if lstm:
        return x, F.stack(h_n, 0), F.stack(c_n, 0)
    return x, F.stack(h_n, 0)


def _functional(mode):
    def fn(input, *args):  # noqa: A002
        """`(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)` or, for packed
        data, `(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)`."""
        if len(args) != 8:
            raise TypeError("%s() takes 9 arguments (input, hx, params, has_biases, num_layers, dropout, train, "
                            "bidirectional, batch_first) or, for packed data, (data, batch_sizes, hx, params, "
                            "has_biases, num_layers, dropout, train, bidirectional); got %d"
                            % (fn.__name__, len(args) + 1))
        if isinstance(args[2], (tuple, list)):  # the packed form: args[2] is params (the padded form's has_biases)
            batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional = args
            batch_first = False
        else:
            batch_sizes = None
            hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
        if mode == "LSTM":
            hx = tuple(hx)
        return _run(mode, input, batch_sizes, hx, params, bool(has_biases), int(num_layers), float(dropout),
                    bool(train), bool(bidirectional), bool(batch_first))
    fn.__name__ = {"RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu", "LSTM": "lstm", "GRU": "gru"}[mode]
    return fn


rnn_tanh = _functional("RNN_TANH")
rnn_relu = _functional("RNN_RELU")
lstm = _functional("LSTM")
gru = _functional("GRU")


def _cell(mode):
    step = _STEPS[mode]

    def fn(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
        gi = F.linear(input, w_ih, b_ih)
        out = step(gi, tuple(hx) if mode == "LSTM" else hx, w_hh, b_hh)
        return out
    fn.__name__ = {"RNN_TANH": "rnn_tanh_cell", "RNN_RELU": "rnn_relu_cell", "LSTM": "lstm_cell",
                   "GRU": "gru_cell"}[mode]
    return fn


rnn_tanh_cell = _cell("RNN_TANH")
rnn_relu_cell = _cell("RNN_RELU")
lstm_cell = _cell("LSTM")
gru_cell = _cell("GRU")


# --- modules ------------------------------------------------------------------------------------------------------
def _zeros_like_input(input, *size):  # noqa: A002
    if input.is_global:
        return creation.zeros(*size, dtype=input.dtype, placement=input.placement, sbp=input.sbp)
    return creation.zeros(*size, dtype=input.dtype, device=input.device)


def _apply_permutation(t, permutation, dim=1):
    return TF.index_select(t, dim, permutation)


def _packed():
    from oneflow_compat._global.nn_rnn_utils import PackedSequence

    return PackedSequence


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          "expects num_layers greater than 1, but got dropout={} and num_layers={}"
                          .format(dropout, num_layers))
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names, self._all_weights = [], []
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                shapes = [(gate_size, layer_input_size), (gate_size, real_hidden_size)]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    shapes += [(gate_size,), (gate_size,)]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    shapes.append((proj_size, hidden_size))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(creation.empty(*shape, dtype=dtype, device=device)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        """The parameters in OneFlow's order, read at each use (so that to_global / load_state_dict / assignment
        of a parameter are seen)."""
        return [getattr(self, n, None) for n in self._flat_weights_names]

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            nn_init.uniform_(weight, -stdv, stdv)

    def check_input(self, input, batch_sizes):  # noqa: A002
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError("input must have {} dimensions, got {}".format(expected_input_dim, input.dim()))
        if self.input_size != input.size(-1):
            raise RuntimeError("input.size(-1) must be equal to input_size. Expected {}, got {}"
                               .format(self.input_size, input.size(-1)))

    def get_expected_hidden_size(self, input, batch_sizes):  # noqa: A002
        if batch_sizes is not None:
            mini_batch = _batch_sizes_list(batch_sizes)[0]
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch,
                self.proj_size if self.proj_size > 0 else self.hidden_size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):  # noqa: A002
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    @property
    def all_weights(self):
        return [[getattr(self, w) for w in weights] for weights in self._all_weights]

    # the shared forward of RNN / GRU (LSTM has its own: two states)
    def _unpack(self, input, hx):  # noqa: A002
        """(input, hx, batch_sizes, sorted_indices, unsorted_indices, max_batch_size, is_batched, batch_dim)."""
        if isinstance(input, _packed()):
            batch_sizes = input.batch_sizes
            return (input.data, hx, batch_sizes, input.sorted_indices, input.unsorted_indices,
                    _batch_sizes_list(batch_sizes)[0], True, None)
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)  # noqa: A001
        max_batch_size = input.size(0) if self.batch_first else input.size(1)
        return input, hx, None, None, None, max_batch_size, is_batched, batch_dim

    def _forward_one_state(self, input, hx, fn):  # noqa: A002
        orig_input = input
        packed = isinstance(orig_input, _packed())
        if not packed:
            if input.dim() != 3 and hx is not None and hx.dim() != 2:
                raise RuntimeError("For unbatched 2-D input, hx should also be 2-D but got {}-D tensor"
                                   .format(hx.dim()))
            if input.dim() == 3 and hx is not None and hx.dim() != 3:
                raise RuntimeError("For batched 3-D input, hx should also be 3-D but got {}-D tensor"
                                   .format(hx.dim()))
            if input.dim() != 3 and hx is not None:
                hx = hx.unsqueeze(1)
        input, hx, batch_sizes, sorted_indices, unsorted_indices, max_batch, is_batched, batch_dim = \
            self._unpack(input, hx)
        if hx is None:
            num_directions = 2 if self.bidirectional else 1
            hx = _zeros_like_input(input, self.num_layers * num_directions, max_batch, self.hidden_size)
        else:
            hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(input, hx, batch_sizes)
        if batch_sizes is None:
            result = fn(input, hx, self._flat_weights, self.bias, self.num_layers, self.dropout, self.training,
                        self.bidirectional, self.batch_first)
        else:
            result = fn(input, batch_sizes, hx, self._flat_weights, self.bias, self.num_layers, self.dropout,
                        self.training, self.bidirectional)
        output, hidden = result[0], result[1]
        if packed:
            return (_packed()(output, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden(hidden, unsorted_indices))
        if not is_batched:
            output, hidden = output.squeeze(batch_dim), hidden.squeeze(1)
        return output, self.permute_hidden(hidden, unsorted_indices)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh) (or relu), stacked and optionally
    bidirectional."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError("Unknown nonlinearity '{}'".format(self.nonlinearity))
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):  # noqa: A002
        return self._forward_one_state(input, hx, rnn_tanh if self.mode == "RNN_TANH" else rnn_relu)


class GRU(RNNBase):
    """Gated recurrent unit: r, z = σ(…), n = tanh(x W_inᵀ + b_in + r ⊙ (h W_hnᵀ + b_hn)), h' = (1 - z) n + z h."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):  # noqa: A002
        return self._forward_one_state(input, hx, gru)


class LSTM(RNNBase):
    """Long short-term memory: i, f, o = σ(…), g = tanh(…), c' = f ⊙ c + i ⊙ g, h' = o ⊙ tanh(c') (then ·W_hrᵀ
    with proj_size > 0)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):  # noqa: A002
        if batch_sizes is not None:
            mini_batch = _batch_sizes_list(batch_sizes)[0]
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):  # noqa: A002
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx=None):  # noqa: A002
        orig_input = input
        packed = isinstance(orig_input, _packed())
        input, hx, batch_sizes, sorted_indices, unsorted_indices, max_batch, is_batched, batch_dim = \
            self._unpack(input, hx)
        if hx is None:
            num_directions = 2 if self.bidirectional else 1
            real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
            hx = (_zeros_like_input(input, self.num_layers * num_directions, max_batch, real_hidden_size),
                  _zeros_like_input(input, self.num_layers * num_directions, max_batch, self.hidden_size))
        else:
            if not packed:
                if is_batched:
                    if hx[0].dim() != 3 or hx[1].dim() != 3:
                        raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                           "({}-D, {}-D) tensors".format(hx[0].dim(), hx[1].dim()))
                else:
                    if hx[0].dim() != 2 or hx[1].dim() != 2:
                        raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                           "({}-D, {}-D) tensors".format(hx[0].dim(), hx[1].dim()))
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
            hx = self.permute_hidden(tuple(hx), sorted_indices)
        self.check_forward_args(input, hx, batch_sizes)
        if batch_sizes is None:
            result = lstm(input, hx, self._flat_weights, self.bias, self.num_layers, self.dropout, self.training,
                          self.bidirectional, self.batch_first)
        else:
            result = lstm(input, batch_sizes, hx, self._flat_weights, self.bias, self.num_layers, self.dropout,
                          self.training, self.bidirectional)
        output, hidden = result[0], tuple(result[1:])
        if packed:
            return (_packed()(output, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden(hidden, unsorted_indices))
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = (hidden[0].squeeze(1), hidden[1].squeeze(1))
        return output, self.permute_hidden(hidden, unsorted_indices)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(creation.empty(num_chunks * hidden_size, input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(creation.empty(num_chunks * hidden_size, hidden_size, dtype=dtype,
                                                  device=device))
        if bias:
            self.bias_ih = Parameter(creation.empty(num_chunks * hidden_size, dtype=dtype, device=device))
            self.bias_hh = Parameter(creation.empty(num_chunks * hidden_size, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            nn_init.uniform_(weight, -stdv, stdv)

    def _batched(self, input, what):  # noqa: A002
        if input.dim() not in (1, 2):
            raise AssertionError("%s: Expected input to be 1-D or 2-D but received %d-D tensor"
                                 % (what, input.dim()))
        is_batched = input.dim() == 2
        return (input if is_batched else input.unsqueeze(0)), is_batched


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):  # noqa: A002
        input, is_batched = self._batched(input, "RNNCell")  # noqa: A001
        if hx is None:
            hx = _zeros_like_input(input, input.size(0), self.hidden_size)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        if self.nonlinearity == "tanh":
            fn = rnn_tanh_cell
        elif self.nonlinearity == "relu":
            fn = rnn_relu_cell
        else:
            raise RuntimeError("Unknown nonlinearity: {}".format(self.nonlinearity))
        ret = fn(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):  # noqa: A002
        input, is_batched = self._batched(input, "LSTMCell")  # noqa: A001
        if hx is None:
            zeros = _zeros_like_input(input, input.size(0), self.hidden_size)
            hx = (zeros, zeros)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        ret = lstm_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else (ret[0].squeeze(0), ret[1].squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):  # noqa: A002
        input, is_batched = self._batched(input, "GRUCell")  # noqa: A001
        if hx is None:
            hx = _zeros_like_input(input, input.size(0), self.hidden_size)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        ret = gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)
