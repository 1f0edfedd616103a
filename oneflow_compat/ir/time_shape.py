"""Blobs with a time shape: what OneFlow's unpack / repeat make and pack / acc undo (v0.3.4 `oneflow/user/ops/
unpack_op.cpp`, `repeat_op.cpp`, `pack_op.cpp`, `acc_op.cpp`).

In OneFlow such a blob flows `n` times per job call (its time shape gains an axis of n) and every op between
unpack/repeat and pack/acc runs once per tick. Here the ticks are unrolled when the job is built: a `TimedBlob`
holds one ordinary blob per tick, and an op applied to timed blobs is built once per tick
(`ops.registry.apply`). The ops then compute what OneFlow's ticks computed, and autodiff, SBP inference and the
plan see ordinary ops. A timed blob can be neither returned nor used as a loss: pack or acc it first.
"""
from oneflow_compat.ir.graph import LazyBlob


class TimedBlob(LazyBlob):
    """One blob per tick (the last axis of the time shape); `ticks[i]` may itself be timed (nested time shapes).
    As a LazyBlob it describes its first tick (the shape, dtype and placement every tick shares)."""

    def __init__(self, ticks):
        ticks = list(ticks)
        if not ticks:
            raise ValueError("a time shape needs at least one tick")
        first = ticks[0]
        super().__init__(first.op, first.index, first.meta, first.hint)
        self.ticks = ticks

    def __repr__(self):
        return "TimedBlob(%d ticks of %r)" % (len(self.ticks), self.ticks[0])


def is_timed(x):
    return isinstance(x, TimedBlob)


def tick_count(inputs, what):
    """The number of ticks the timed inputs share (an error when they differ)."""
    counts = {len(x.ticks) for x in inputs if isinstance(x, TimedBlob)}
    if len(counts) > 1:
        raise ValueError("%s: inputs with different time shapes (%s ticks): OneFlow cannot run them together" % (
            what, " and ".join(map(str, sorted(counts)))))
    return counts.pop()
