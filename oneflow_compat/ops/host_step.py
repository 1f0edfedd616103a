"""A host copy of each job's train-step counter, so that the learning rate and the updates never wait for the device.

The counter (`System-Train-TrainStep-<job>`, a variable on the job's devices) is read by the `learning_rate` op and
by every `optimizer_update` (the learning-rate schedule, Adam's bias correction). Reading the device copy there
would cost one device -> host synchronisation per variable and step. Its writers are few: the job's `increment`
op, once per call, and the variable store's host writes (initialisation, checkpoint loads), which it counts in
`spec.host_writes`. So the host copy is read from the device once after a host write (the first call) and
advanced by the increment op after that.

Where the counter has no copy on this process (a default placement without this machine) the value of the op's
own input is read every call instead.
"""
from oneflow_compat.backend import devices, step_scalars


def counter_spec(blob):
    """The variable spec behind `blob` (the counter, maybe through boxing ops), or None."""
    op = blob.op
    while op.defn.boxing and len(op.inputs) == 1:
        op = op.inputs[0].op
    return op.attrs["spec"] if op.defn.role == "variable" else None


def _read(piece):
    return int(devices.to_host(piece).reshape(-1)[0])


def _in_step(piece, value):
    """The counter's value read by a running step: a host value, which a captured CUDA graph would freeze."""
    step_scalars.refuse_in_capture("the train-step counter read on the host by a step (a host learning rate)")
    return value(piece)


def reader(blob):
    """A function of the counter's piece (as the op receives it) returning the counter's value (a host value read
    by a running step, which a captured CUDA graph would freeze: refused while capturing)."""
    spec = counter_spec(blob)
    if spec is None:
        return lambda piece: _in_step(piece, _read)
    mirror = _mirror_reader(spec)

    def value(piece):
        if not spec.shards:  # no copy on this process: its increments happen elsewhere
            return _in_step(piece, _read)
        return _in_step(piece, mirror)

    return value


def _mirror_reader(spec):
    """The host copy of the counter (read from `piece`, the device copy, once after each host write)."""
    def value(piece):
        writes = getattr(spec, "host_writes", 0)
        mirror = getattr(spec, "host_step", None)
        if mirror is None or mirror[0] != writes:
            mirror = spec.host_step = [writes, _read(piece)]
        return mirror[1]
    return value


def advance(spec):
    """After the device copy was incremented: the host copy follows (if it is current)."""
    mirror = getattr(spec, "host_step", None)
    if mirror is not None and mirror[0] == getattr(spec, "host_writes", 0):
        mirror[1] += 1


def current(blob):
    """A function of no arguments returning the counter's value now, from its host copy (read from the device once
    after a host write): what a step scalar (backend/step_scalars.py) computes its value from at a call's start.
    None where the counter has no copy on this process (its value would have to be read every call)."""
    spec = counter_spec(blob)
    if spec is None:
        return None
    mirror_reader = _mirror_reader(spec)

    def now():
        if not spec.shards:
            raise RuntimeError("the train-step counter %r has no copy on this process" % spec.name)
        return mirror_reader(next(iter(spec.shards.values())))

    return now
