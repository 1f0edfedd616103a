"""Checks of values that may live on a device (an index out of range), made without waiting for the device.

A kernel that must refuse some values computes the failure condition as an array. On the host (numpy) a failure
raises at once. On a device, reading the condition back inside the kernel would make the host wait for the device
at every op (a device -> host synchronisation per op; OneFlow's CUDA kernels assert on the device instead). So on a
device `require` launches nothing and copies nothing: it notes the condition (a 0-d device array), the values that
name the failure (0-d device arrays or host numbers) and which check it is (`_SITES`, a host table of the checks'
error types and messages, numbered), in this thread's pending checks. Every fetch — a read of a device value on the
host, which waits for the device anyway: `backend/devices.to_host` (`.numpy()`, `.item()`, `.tolist()`, the
comm's host copies), a step's results (runtime/plan.py's one download, the executor, legacy eager) — brings the
pending flags and values down in the SAME transfer as what it fetches (`take_pending`, `device_arrays`,
`put_back`) and `raise_failed` raises the first failure, in the order the checks were made, with the words the
host raises at once; then the checks are forgotten (a failed fetch does not fail again).

The error names where the check was made as the host's error does (its notes: "(while running op 'x' of type
'gather' in job 'j')", "(while running nn.Graph ...)"): when a device check is made, the runtime's note givers
(`note_frames`: a function's frames, e.g. the executable's step loop; `note_context`: e.g. the activity stack) are
asked — only then, so the ops without device checks pay nothing — and kept with the pending check (not in the
table: they change from call to call), followed by one saying that the check ran on the device (a kernel called
outside the runtime raises its words alone, as the host does).

Pending checks stay bounded without a fetch: past FOLD_AT of them, each device's are folded ON the device into one
error record (the first failure's check number, values and notes number: a handful of launches, no transfer), so
that a loop that never fetches holds a fixed, small amount of device memory and the first error is still the one
raised (a record keeps at most NOTES_KEPT distinct notes; a later failure past them is raised without its notes).
Why a list first and a device record only then: a record written by every checking op (a reduction or an atomic
into a per-device error buffer) would cost at least one launch per op, a step's budget counted in tens; the list
costs none, and the fold pays its few launches once per FOLD_AT checks.
"""
import contextlib
import sys
import threading

import numpy

FOLD_AT = 64  # pending checks before a device's are folded into one record on the device
NOTES_KEPT = 256  # distinct notes a folded record keeps
DEVICE_NOTE = "(an index checked on the device: raised at the first fetch of a device value after the op)"

_local = threading.local()
_SITES = []  # check number -> (error type, message)
_SITE_OF = {}  # (error type, message) -> check number
_SITES_LOCK = threading.Lock()
_FRAME_NOTES = {}  # code object -> note(frame): the note of a check made inside a function of that code
_CONTEXT_NOTES = []  # [note()]: notes of what this thread is running (None: nothing to say)
_FOLDED = -1  # the check number of a folded record: its one value is a device row (`_unfolded`), its notes a list

# A pending check: (module, failed, check number, values, notes). Host checks (numpy, bool, ...) are device
# checks whose arrays came down (`put_back`).


def _pending():
    pending = getattr(_local, "pending", None)
    if pending is None:
        pending = _local.pending = []
    return pending


def note_frames(function, note):
    """A device check made while `function` runs (any frame of its code, nested closures by their own function)
    gets the note `note(frame)` (None: no note), innermost frames first, as an exception raised there would."""
    _FRAME_NOTES[function.__code__] = note  # (the closures of one `def` share its code)


def note_context(note):
    """A device check also gets `note()` (None: no note), after the frames' notes."""
    _CONTEXT_NOTES.append(note)


def _notes():
    """(the frames' notes, the context's notes) of a check made now."""
    notes = []
    if _FRAME_NOTES:
        frame = sys._getframe(2)
        while frame is not None:
            note = _FRAME_NOTES.get(frame.f_code)
            if note is not None:
                text = note(frame)
                if text and text not in notes:
                    notes.append(text)
            frame = frame.f_back
    return tuple(notes), _context_notes()


def _context_notes():
    return tuple(text for text in (note() for note in _CONTEXT_NOTES) if text)


def _site(error, message):
    key = (error, message)
    site = _SITE_OF.get(key)
    if site is None:
        with _SITES_LOCK:
            site = _SITE_OF.get(key)
            if site is None:
                site = _SITE_OF[key] = len(_SITES)
                _SITES.append(key)
    return site


def _on_device(v):
    return hasattr(v, "get") and hasattr(v, "dtype") and not isinstance(v, (numpy.ndarray, numpy.generic))


def _host_value(v):
    """A value for the message: a number, or a list for a 1-d array (the host's `tolist()`, for `%s`)."""
    if _on_device(v):
        v = v.get()
    if isinstance(v, numpy.ndarray) and v.ndim:
        return v.tolist()
    return v.item() if hasattr(v, "item") else v


def _device_id(a):
    return getattr(getattr(a, "device", None), "id", 0)


def require(xp, failed, message, *values, error=ValueError):
    """`error`(`message` % `values`) if `failed` (a 0-d boolean array); `values` are integers, 0-d integer arrays
    of the same module or 1-d ones (formatted as lists, `%s`). Immediate on the host; on a device at the next fetch
    (nothing launched or read here)."""
    if xp is numpy or not _on_device(failed):
        if failed:
            raise error(message % tuple(_host_value(v) for v in values))
        return
    pending = _pending()
    pending.append((xp, failed, _site(error, message), values, _notes()))
    if len(pending) > FOLD_AT:
        _fold(pending)


def pending_count():
    """How many checks this thread holds (a folded record counts one)."""
    return len(_pending())


def take_pending(since=0):
    """The pending checks (those after the first `since`), taken out: a caller that reads device values back
    anyway brings their `device_arrays` down with its own (one transfer) and gives the host values back with
    `put_back`. (Nothing folds while a CUDA graph captures, so `since` = `pending_count()` before a capture takes
    exactly the capture's checks.)"""
    pending = _pending()
    taken = pending[since:]
    del pending[since:]
    return taken


def device_arrays(taken):
    """The device arrays of checks taken with `take_pending` (each check's flag, then its device values), in the
    order `put_back` expects their host copies."""
    return [a for _, a in _device_arrays(taken)]


def _device_arrays(taken):
    out = []
    for xp, failed, _, values, _ in taken:
        if xp is numpy:
            continue
        out.append((xp, failed))
        out.extend((xp, v) for v in values if _on_device(v))
    return out


def put_back(taken, host):
    """The checks of `take_pending` with their device arrays' host copies (`host`, in `device_arrays`' order):
    host checks again, which `raise_failed` raises without reading anything (those that passed are dropped)."""
    host = iter(host)
    back = []
    for entry in taken:
        xp, failed, site, values, notes = entry
        if xp is numpy:
            back.append(entry)
            continue
        flag = bool(numpy.asarray(next(host)).reshape(-1)[0])
        values = tuple(numpy.asarray(next(host)).reshape(v.shape) if _on_device(v) else v for v in values)
        if not flag:
            continue
        if site == _FOLDED:
            site, values, kept = _unfolded(values[0])
            notes = notes[kept] if kept >= 0 else ()
        back.append((numpy, True, site, values, notes))
    _pending().extend(back)


def restore_pending(taken, again=False):
    """Puts checks taken with `take_pending` back as they were; `again`: made again now (a captured CUDA graph's
    checks, which its replays recompute in the same device memory), their context notes (the call's number) now's."""
    pending = _pending()
    if again:
        context = _context_notes()
        taken = [(xp, failed, site, values, notes if site == _FOLDED else (notes[0], context))
                 for xp, failed, site, values, notes in taken]
    pending.extend(taken)
    if len(pending) > FOLD_AT:
        _fold(pending)


def discard_pending():
    """Forgets this thread's pending checks unread (a fresh process context: runtime/context.reset)."""
    del _pending()[:]


def raise_failed():
    """Raises the first failed pending check (in the order they were made) with its error type, words and notes;
    forgets them all. The device checks come down in one transfer per device (this is a fetch)."""
    pending = _pending()
    if not pending:
        return
    taken = take_pending()
    arrays = _device_arrays(taken)
    if arrays:
        put_back(taken, _download(arrays))
        taken = take_pending()
    for _, bad, site, values, notes in taken:
        if bad:
            error, message = _SITES[site]
            e = error(message % tuple(_host_value(v) for v in values))
            notes = notes[0] + tuple(n for n in notes[1] if n not in notes[0]) if notes else ()
            if notes and hasattr(e, "add_note"):  # (a kernel called by itself: its words alone, as on the host)
                for note in notes + (DEVICE_NOTE,):
                    e.add_note(note)
            raise e


def _download(arrays):
    """Host copies of the [(module, integer or boolean device array)]: one concatenation and one transfer per
    device."""
    groups = {}
    for i, (xp, a) in enumerate(arrays):
        groups.setdefault((id(xp), _device_id(a)), []).append(i)
    out = [None] * len(arrays)
    for (_, device), indices in groups.items():
        xp = arrays[indices[0]][0]
        parts = [arrays[i][1] for i in indices]
        with _on_device_of(xp, device):  # (the concatenation is made where its parts are)
            flat = xp.concatenate([xp.reshape(p, (-1,)) for p in parts], dtype=numpy.int64, casting="unsafe").get()
        at = 0
        for i, p in zip(indices, parts):
            out[i] = flat[at:at + p.size]
            at += p.size
    return out


def _on_device_of(xp, device):
    cuda = getattr(xp, "cuda", None)
    if cuda is None or not hasattr(cuda, "Device"):
        return contextlib.nullcontext()
    return cuda.Device(device)


def _capturing(xp):
    """Whether the current stream of `xp` is capturing a CUDA graph (whose launches replay: nothing is folded)."""
    try:
        return bool(xp.cuda.get_current_stream().is_capturing())
    except Exception:  # noqa: BLE001 - a module without streams captures nothing
        return False


def _fold(pending):
    """Each device's pending checks (two or more) folded into one record on that device, in place of the first."""
    groups = {}
    for i, entry in enumerate(pending):
        if entry[0] is not numpy:
            groups.setdefault((id(entry[0]), _device_id(entry[1])), []).append(i)
    into, gone = {}, set()
    for (_, device), indices in groups.items():
        xp = pending[indices[0]][0]
        if len(indices) < 2 or _capturing(xp):
            continue
        with _on_device_of(xp, device):  # (the record is made where its checks are)
            into[indices[0]] = _folded(xp, [pending[i] for i in indices])
        gone.update(indices[1:])
    if into:
        pending[:] = [into.get(i, entry) for i, entry in enumerate(pending) if i not in gone]


def _unfolded(row):
    """(check number, values, notes number) of a folded record's row [check number, notes number (-1: none), k,
    k lengths (-1: a number), the values' elements...]."""
    row = [int(v) for v in numpy.asarray(row).reshape(-1)]
    site, kept, k = row[0], row[1], row[2]
    at, values = 3 + k, []
    for length in row[3:3 + k]:
        if length < 0:
            values.append(row[at])
            at += 1
        else:
            values.append(numpy.array(row[at:at + length], dtype=numpy.int64))
            at += length
    return site, tuple(values), kept


def _folded(xp, entries):
    """One check standing for `entries` (checks of one device, in order): its flag is whether any failed, its one
    value the row of the first that failed (`_unfolded`), its notes the distinct notes of the entries (a list the
    rows number). Made on the device: the host's part of the rows goes up in one copy, the device values are
    written into them, a reduction picks the first failure; nothing is read back."""
    kept = next((e[4] for e in entries if e[2] == _FOLDED), [])  # (a record folded again keeps its numbering)
    number = {notes: i for i, notes in enumerate(kept)}
    rows, device_parts = [], []
    for i, (_, _, site, values, notes) in enumerate(entries):
        if site == _FOLDED:
            rows.append([])
            device_parts.append((i, 0, values[0]))
            continue
        if notes not in number and len(kept) < NOTES_KEPT:
            number[notes] = len(kept)
            kept.append(notes)
        lengths = [v.size if getattr(v, "ndim", 0) else -1 for v in values]
        row = [site, number.get(notes, -1), len(values)] + lengths
        for v in values:
            if _on_device(v):
                device_parts.append((i, len(row), v))
                row.extend([0] * v.size)
            else:
                row.extend(numpy.asarray(v, dtype=numpy.int64).reshape(-1).tolist())
        rows.append(row)
    width = max([len(r) for r in rows] + [j + v.size for _, j, v in device_parts])
    table = numpy.zeros((len(entries), width), dtype=numpy.int64)
    for i, row in enumerate(rows):
        table[i, :len(row)] = row
    table = xp.asarray(table)
    for i, j, v in device_parts:
        table[i, j:j + v.size] = xp.reshape(v, (-1,))
    flags = xp.stack([xp.reshape(e[1], ()) for e in entries])
    first = xp.argmax(flags.astype(numpy.int8))  # the first True (0 when none failed: the flag below is False)
    return xp, xp.take(flags, first), _FOLDED, (xp.take(table, first, axis=0),), kept
