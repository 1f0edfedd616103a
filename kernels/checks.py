"""Checks of values that may live on a device, made without waiting for the device.

A kernel that must refuse some values (labels out of range) computes the failure condition as an array. On the host
(numpy) a failure raises at once. On a device, reading the condition back inside the step would stall until the
device caught up; the condition stays there instead, and `raise_failed()` — which the runtime calls where it reads
the step's results back anyway — fetches every pending condition in one transfer and raises the first failure.
A step that brings its results down itself takes the pending conditions along in its one transfer
(`take_pending`, `put_back`), so that `raise_failed` has nothing left to fetch.
"""
import threading

import numpy

_local = threading.local()


def _pending():
    pending = getattr(_local, "pending", None)
    if pending is None:
        pending = _local.pending = []
    return pending


def _host_value(v):
    if hasattr(v, "get"):
        v = v.get()
    return v.item() if hasattr(v, "item") else v


def require(xp, failed, message, *values, error=ValueError):
    """`error`(`message` % `values`) if `failed` (a 0-d boolean array); `values` are numbers or 0-d arrays of
    the same module. Immediate on the host, at the next `raise_failed()` on a device."""
    if xp is numpy:
        if failed:
            raise error(message % tuple(_host_value(v) for v in values))
        return
    _pending().append((xp, failed, (error, message), values))


def take_pending():
    """The pending device checks [(xp, failed, message, values)], taken out: a caller that reads device values back
    anyway brings each `failed` down with them (one transfer) and gives the host flags back with `put_back`."""
    pending = _pending()
    taken = list(pending)
    del pending[:]
    return taken


def put_back(taken, host_failed):
    """The checks of `take_pending`, their failure flags now host values: `raise_failed` reads no flag again."""
    _pending().extend((numpy, bool(numpy.asarray(flag).reshape(-1)[0]), message, values)
                      for (_, _, message, values), flag in zip(taken, host_failed))


def restore_pending(taken):
    """Puts device checks taken with `take_pending` back as they were (a captured CUDA graph's checks, which its
    replays recompute in the same device memory)."""
    _pending().extend(taken)


def raise_failed():
    """Raises the first failed pending device check (in the order they were made); forgets them all."""
    pending = _pending()
    if not pending:
        return
    checks = list(pending)
    del pending[:]
    on_device = [c for c in checks if c[0] is not numpy]
    if on_device:
        xp = on_device[0][0]
        flags = iter(xp.stack([xp.reshape(c[1], ()) for c in on_device]).get())  # the one device -> host transfer
    failed = [c[1] if c[0] is numpy else next(flags) for c in checks]
    for (_, _, (error, message), values), bad in zip(checks, failed):
        if bad:
            raise error(message % tuple(_host_value(v) for v in values))
