"""The bytes one member of a collective sends, by the rule `process_comm.py` documents (the *direct* schedule: every
piece goes once from a member that has it straight to each member that needs it; sums are taken where they are
received; a member's own piece never crosses the wire).

These are the only formulas of the project's communication accounting: `RecordingComm` applies them to the arrays
of each call it sees, and the transition table (`ops/transitions.py`) applies them to the pieces its rows plan, so
that a row's cost, `explain`'s figure and the bytes a recorded run sends are one number. Pure Python on sizes (no
numpy), so the compiler can price a move without arrays.

Every function returns an int: bytes sent by member `i` (its index in the sorted member tuple) of `k` members.
"""
from oneflow_compat.backend.balanced_split import balanced_sizes


def allreduce(elements, itemsize, k, i):
    """A reduce-scatter of the flat array's balanced chunks, then an all-gather of the reduced chunks: member i
    sends the other members' chunks of its addend, then its reduced chunk to every other member."""
    if k <= 1:
        return 0
    own = balanced_sizes(elements, k)[i]
    return (elements - own + (k - 1) * own) * itemsize


def reduce_scatter(total_bytes, own_bytes, k):
    """Member i sends every other member that member's share of its addend."""
    return 0 if k <= 1 else total_bytes - own_bytes


def allgather(own_bytes, k):
    """Member i sends its piece to every other member."""
    return (k - 1) * own_bytes


def alltoall(piece_bytes, i):
    """Member i sends piece j to member j (its own piece stays)."""
    return sum(piece_bytes) - piece_bytes[i]


def reduce(nbytes, is_root):
    """Every member but the root sends its addend to the root."""
    return 0 if is_root else nbytes


def broadcast(nbytes, k, is_root):
    """The root sends its buffer to every other member."""
    return (k - 1) * nbytes if is_root else 0


def gather(own_bytes, is_root):
    """Every member but the root sends its piece to the root."""
    return 0 if is_root else own_bytes
