"""`flow.unpack`, `flow.pack`, `flow.repeat`, `flow.acc` (OneFlow v0.3.4 `oneflow/python/framework/ops.py`): blobs
with a time shape, unrolled into one blob per tick when the job is built (`ir/time_shape.py`).

* unpack(x, n): n ticks, tick i holding rows [i·k, (i+1)·k) of x (k = x.shape[0] / n);
* pack(x, n): the n ticks of the last time axis concatenated along axis 0;
* repeat(x, n): n ticks of x itself;
* acc(x, n): the sum of the n ticks of the last time axis (the ticks of a larger axis in groups of n).
Like OneFlow, none of them works in eager mode.
"""
from oneflow_compat.ir import builder
from oneflow_compat.ir.time_shape import TimedBlob, is_timed
from oneflow_compat.ops.registry import apply


def _check(what, n):
    from oneflow_compat.framework import session as sess

    assert not sess.eager_execution_enabled(), "flow.%s does not work in eager mode (as in OneFlow)" % what
    if not (isinstance(n, int) and n >= 1):
        raise ValueError("flow.%s: the count must be a positive int, got %r" % (what, n))


def _name(name, prefix, what):
    return name if name is not None else builder.current("flow.%s" % what).job.unique_name(prefix)


def unpack(input, unpack_num, name=None):  # noqa: A002 - OneFlow's argument name
    _check("unpack", unpack_num)
    name = _name(name, "Unpack_", "unpack")
    if is_timed(input):  # the new time axis goes after the existing ones
        return TimedBlob([unpack(t, unpack_num, "%s-tick%d" % (name, i)) for i, t in enumerate(input.ticks)])
    rows = input.shape[0]
    if rows % unpack_num:
        raise ValueError("flow.unpack: %d rows cannot be cut into %d equal pieces" % (rows, unpack_num))
    k = rows // unpack_num
    nd = len(input.shape)
    return TimedBlob([apply("slice", [input], {"slice_tup": ((i * k, (i + 1) * k, 1),) + ((None, None, None),) * (
        nd - 1)}, name="%s-tick%d" % (name, i)) for i in range(unpack_num)])


def _innermost(x):
    return is_timed(x) and not is_timed(x.ticks[0])


def pack(input, pack_num, name=None):  # noqa: A002
    _check("pack", pack_num)
    name = _name(name, "Pack_", "pack")
    if not is_timed(input):
        raise ValueError("flow.pack: the input has no time shape to pack (use it after flow.unpack or flow.repeat)")
    if not _innermost(input):
        return TimedBlob([pack(t, pack_num, "%s-tick%d" % (name, i)) for i, t in enumerate(input.ticks)])
    if len(input.ticks) != pack_num:
        raise ValueError("flow.pack: the last time axis has %d ticks, not pack_num %d" % (len(input.ticks), pack_num))
    if pack_num == 1:
        return apply("identity", input.ticks, name=name)
    return apply("concat", input.ticks, {"axis": 0}, name=name)


def repeat(input, repeat_num, name=None):  # noqa: A002
    _check("repeat", repeat_num)
    name = _name(name, "Repeat_", "repeat")
    if is_timed(input):
        return TimedBlob([repeat(t, repeat_num, "%s-tick%d" % (name, i)) for i, t in enumerate(input.ticks)])
    return TimedBlob([input] * repeat_num)


def acc(one, max_acc_num, name=None):
    _check("acc", max_acc_num)
    name = _name(name, "Acc_", "acc")
    if not is_timed(one):
        raise ValueError("flow.acc: the input has no time shape to accumulate (use it after flow.unpack or "
                         "flow.repeat)")
    if not _innermost(one):
        return TimedBlob([acc(t, max_acc_num, "%s-tick%d" % (name, i)) for i, t in enumerate(one.ticks)])
    ticks = one.ticks
    if len(ticks) % max_acc_num:
        raise ValueError("flow.acc: %d ticks cannot be accumulated in groups of %d" % (len(ticks), max_acc_num))
    groups = [ticks[i:i + max_acc_num] for i in range(0, len(ticks), max_acc_num)]
    sums = [g[0] if len(g) == 1 else apply("add_n", g, name="%s-%d" % (name, i) if len(groups) > 1 else name)
            for i, g in enumerate(groups)]
    return sums[0] if len(sums) == 1 else TimedBlob(sums)
