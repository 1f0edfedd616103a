"""`oneflow.nn.utils.rnn` (OneFlow 0.9): packed sequences (implemented in `_global/nn_rnn_utils.py`)."""
from oneflow_compat._global.nn_rnn_utils import (  # noqa: F401
    PackedSequence, invert_permutation, pack_padded_sequence, pack_sequence, pad_packed_sequence, pad_sequence,
    unpack_sequence, unpad_sequence)
