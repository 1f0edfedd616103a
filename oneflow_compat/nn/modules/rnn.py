"""`oneflow.nn.modules.rnn`: the recurrent layers OneFlow 0.9 defines in `python/oneflow/nn/modules/rnn.py`, for
code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/nn_rnn.py`)."""
from oneflow_compat._global.nn_rnn import (  # noqa: F401
    GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase)
