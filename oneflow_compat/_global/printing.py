"""`repr`/`print` of tensors as OneFlow 0.9 shows them (PyTorch's layout: 4 decimals, aligned columns, scientific
notation for wide ranges, `...` beyond 1000 elements), with the dtype always shown:

    tensor([[ 0.1000, -1.5000]], dtype=oneflow.float32)
    tensor([...], placement=oneflow.placement(type="cuda", ranks=[0, 1]), sbp=(oneflow.sbp.split(dim=0),),
           dtype=oneflow.float32)

Printing a global tensor gathers its whole value: a collective, every rank must print it.
"""
import math

import numpy as np

from oneflow_compat._global.print_options import PRINT_OPTS  # (flow.set_printoptions)

LINEWIDTH = 80  # where the output is no terminal


def _linewidth():
    if not PRINT_OPTS.autoset_linewidth:
        return PRINT_OPTS.userset_linewidth
    return _terminal_linewidth()


def _terminal_linewidth():
    """OneFlow 0.9's line width: the terminal's columns, else 80 (`tensor_str_util._autoset_linewidth`) — the
    2D SBP page's printed rows of eight numbers came from a terminal wider than 80. `COLUMNS` first: the launcher
    sets it, since under mpiexec a process's output is a pipe to the terminal."""
    import os

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size()[0]
    except (OSError, ValueError):
        return LINEWIDTH


class _Formatter:
    def __init__(self, values):
        self.floating = values.dtype.kind == "f"
        self.boolean = values.dtype.kind == "b"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        flat = values.reshape(-1)
        if self.boolean:
            self.width = max((len(str(bool(v))) for v in flat), default=1)
            return
        if not self.floating:
            self.width = max((len(str(int(v))) for v in flat), default=1)
            return
        finite = flat[np.isfinite(flat)].astype(np.float64)
        nonzero = np.abs(finite[finite != 0])
        if finite.size and np.any(finite != np.ceil(finite)):
            self.int_mode = False
        if nonzero.size:
            hi, lo = float(nonzero.max()), float(nonzero.min())
            if self.int_mode:
                self.sci_mode = hi > 1e8
            else:
                self.sci_mode = hi / lo > 1000.0 or hi > 1e8 or lo < 1e-4
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode
        # the width of the non-zero entries only, as OneFlow's tensor_str (v0.9.0) measures it: zeros, -0. included,
        # never widen a column (`tensor([3., 0., -0.])`)
        self.width = max((len(self._plain(v)) for v in flat if v != 0), default=1)

    def _plain(self, value):
        if self.boolean:
            return str(bool(value))
        if not self.floating:
            return str(int(value))
        value = float(value)
        if not math.isfinite(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        if self.sci_mode:
            return ("{:.%de}" % PRINT_OPTS.precision).format(value)
        if self.int_mode:
            return "{:.0f}.".format(value)
        return ("{:.%df}" % PRINT_OPTS.precision).format(value)

    def format(self, value):
        text = self._plain(value)
        return " " * (self.width - len(text)) + text


def _vector(values, indent, summarize, fmt):
    element_length = fmt.width + 2
    per_line = max(1, int(math.floor((_linewidth() - indent) / element_length)))
    if summarize and values.shape[0] > 2 * PRINT_OPTS.edgeitems:
        items = [fmt.format(v) for v in values[:PRINT_OPTS.edgeitems]] + [" ..."] + \
            [fmt.format(v) for v in values[-PRINT_OPTS.edgeitems:]]
    else:
        items = [fmt.format(v) for v in values]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _body(values, indent, summarize, fmt):
    if values.ndim == 0:
        return fmt.format(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, fmt)
    n = values.shape[0]
    if summarize and n > 2 * PRINT_OPTS.edgeitems:
        parts = [_body(values[i], indent + 1, summarize, fmt) for i in range(PRINT_OPTS.edgeitems)] + ["..."] + \
            [_body(values[i], indent + 1, summarize, fmt) for i in range(n - PRINT_OPTS.edgeitems, n)]
    else:
        parts = [_body(values[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _summary_values(values):
    """The elements that are shown (for the column width), as numpy does for summarized arrays."""
    if values.ndim == 0 or values.size <= PRINT_OPTS.threshold:
        return values
    parts = []
    for index in np.ndindex(*[min(d, 2 * PRINT_OPTS.edgeitems) for d in values.shape]):
        edge = PRINT_OPTS.edgeitems
        full = tuple(i if i < edge else d - 2 * edge + i for i, d in zip(index, values.shape))
        parts.append(values[full])
    return np.array(parts)


def array_str(values, indent):
    summarize = values.size > PRINT_OPTS.threshold
    fmt = _Formatter(_summary_values(values))
    return _body(values, indent, summarize, fmt)


def tensor_repr(t):
    prefix = "tensor("
    indent = len(prefix)
    values = np.asarray(t.numpy())
    suffixes = []
    if t.is_global:
        suffixes.append("placement=%r" % (t.placement,))
        suffixes.append("sbp=%s" % (_tuple_text(t.sbp),))
    elif t._device != "cpu" and t.device.type == "cuda":
        # the tensor's device with its index (a plain "cuda" is the process's, cuda:LOCAL_RANK), as OneFlow shows it
        suffixes.append("device='%s'" % (t.device,))
    if values.size == 0:
        body = "[]"
        if values.shape != (0,):
            suffixes.append("size=%s" % (tuple(values.shape),))
    elif values.dtype == object:  # api-data: tensor buffers / OFRecords (one array or record per row): not numbers
        body = "[...]"
        suffixes.append("size=%s" % (tuple(values.shape),))
    else:
        body = array_str(values, indent)
    suffixes.append("dtype=oneflow.%s" % t.dtype.name)
    if t.grad_fn is not None:
        suffixes.append("grad_fn=<%s>" % t.grad_fn.name())
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)


def _add_suffixes(text, suffixes, indent):
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last_line_len + len(s) + 2 > _linewidth():
            parts.append(",\n" + " " * indent + s)
            last_line_len = indent + len(s)
        else:
            parts.append(", " + s)
            last_line_len += len(s) + 2
    return "".join(parts) + ")"


def _tuple_text(items):
    items = list(items)
    return "(" + ", ".join(repr(i) for i in items) + ("," if len(items) == 1 else "") + ")"
