"""`flow.visualize_sharding(tensor)`: which rank holds which block of a global tensor, drawn in the terminal.

A project addition (OneFlow has none; PyTorch's DTensor has `visualize_sharding`, JAX `visualize_array_sharding`).
The layout follows OneFlow's SBP on n-D placements: mesh axis k applies its SBP to what the axes before it left,
so `(split(0), split(0))` on a 2 x 2 mesh cuts dim 0 in two and each half in two again; `split` pieces are the
balanced ones (the first `n % k` pieces one row longer); `broadcast` ranks hold copies of their block;
`partial_sum` ranks hold addends whose sum is the block. It also takes a layout without a tensor
(`visualize_sharding((8, 6), placement=P, sbp=(S0, S1))`), n-D placements included.

    >>> flow.visualize_sharding(x)        # x: (10, 6) float32 on ranks [0, 1, 2, 3], split(0)
    (10, 6) float32 on cpu ranks [0, 1, 2, 3], sbp (oneflow.sbp.split(dim=0),)
                ┌────────┐
    dim 0: 0-2  │ rank 0 │
                ├────────┤
           3-5  │ rank 1 │
                ├────────┤
           6-7  │ rank 2 │
                ├────────┤
           8-9  │ rank 3 │
                └────────┘
"""
import sys

from oneflow_compat.backend.balanced_split import balanced_ranges
from oneflow_compat.ir import sbp as ir_sbp

__all__ = ["visualize_sharding", "sharding_blocks", "sharding_text"]


def _layout(tensor_or_shape, placement, sbp):
    """(shape, dtype text, placement, mesh shape, ranks in C order, sbp tuple) of a tensor or a given layout."""
    dtype = ""
    if hasattr(tensor_or_shape, "shape") and hasattr(tensor_or_shape, "is_global"):
        t = tensor_or_shape
        if not t.is_global and placement is None:
            raise ValueError("visualize_sharding: the tensor is local (it lies whole on its process); give a global "
                             "tensor (x.to_global(placement, sbp)) or placement= and sbp=")
        shape = tuple(int(n) for n in t.shape)
        dtype = str(t.dtype).replace("oneflow.", "")
        placement = t.placement if placement is None else placement
        sbp = t.sbp if sbp is None else sbp
    else:
        try:
            if isinstance(tensor_or_shape, (str, bytes)):
                raise TypeError
            shape = tuple(int(n) for n in tensor_or_shape)
        except (TypeError, ValueError):
            raise TypeError("visualize_sharding takes a global tensor or a shape, got %r"
                            % (tensor_or_shape,)) from None
        if placement is None or sbp is None:
            raise TypeError("visualize_sharding(shape, placement=, sbp=): a shape needs a placement and an sbp")
    mesh = tuple(int(n) for n in placement.hierarchy)
    # the parallel order is the ranks sorted, whatever order the mesh was written in (as the runtime and OneFlow
    # read it: ir/placement.py)
    ranks = list(placement.rank_list)
    if not isinstance(sbp, (list, tuple)):
        sbp = (sbp,)
    sbp = tuple(sbp)
    if len(sbp) != len(mesh):
        raise ValueError("visualize_sharding: %d sbp for a placement of %d mesh axes %s (one sbp per axis)"
                         % (len(sbp), len(mesh), list(mesh)))
    for s in sbp:
        ir = getattr(s, "_ir", s)
        if ir_sbp.is_split(ir) and not 0 <= ir.axis < len(shape):
            raise ValueError("visualize_sharding: %r splits dim %d of a %d-d tensor %s"
                             % (s, ir.axis, len(shape), shape))
    return shape, dtype, placement, mesh, ranks, sbp


def _coords(index, mesh):
    out = []
    for n in reversed(mesh):
        out.append(index % n)
        index //= n
    return tuple(reversed(out))


def sharding_blocks(tensor_or_shape, placement=None, sbp=None):
    """[(ranges, ranks, partial axes)]: each block of the tensor as per-dim (start, stop) ranges, the ranks that
    hold it (in mesh order) and the mesh axes over which those ranks hold addends (partial_sum), blocks in order."""
    shape, _, _, mesh, ranks, sbp = _layout(tensor_or_shape, placement, sbp)
    blocks = {}
    partial_axes = tuple(k for k, s in enumerate(sbp) if getattr(s, "_ir", s) == ir_sbp.P)
    for i, rank in enumerate(ranks):
        c = _coords(i, mesh)
        ranges = [(0, n) for n in shape]
        for k, s in enumerate(sbp):
            ir = getattr(s, "_ir", s)
            if ir_sbp.is_split(ir):
                lo, hi = ranges[ir.axis]
                a, b = balanced_ranges(hi - lo, mesh[k])[c[k]]
                ranges[ir.axis] = (lo + a, lo + b)
        ranges = tuple(ranges)
        # an empty piece (fewer rows than ranks) is this rank's own, not a copy of another rank's empty piece
        key = (ranges, rank) if _is_empty(ranges, shape) else (ranges, None)
        blocks.setdefault(key, (ranges, []))[1].append(rank)
    ordered = sorted(blocks.values(), key=lambda block: (block[0], block[1]))
    return [(ranges, holders, partial_axes) for ranges, holders in ordered]


def _is_empty(ranges, shape):
    return any(b <= a for a, b in ranges) and all(n > 0 for n in shape)


def _range_text(r):
    a, b = r
    if b - a <= 0:
        return "empty"
    return "%d" % a if b - a == 1 else "%d-%d" % (a, b - 1)


def _cell_text(holders, partial_axes):
    names = ", ".join(map(str, holders))
    label = ("rank " if len(holders) == 1 else "ranks ") + names
    return ("\u03a3 " + label) if partial_axes else label


def sharding_text(tensor_or_shape, placement=None, sbp=None):
    """The drawing `visualize_sharding` prints, as a string."""
    shape, dtype, pl, mesh, ranks, sbp = _layout(tensor_or_shape, placement, sbp)
    blocks = sharding_blocks(shape, pl, sbp)
    split_dims = sorted({getattr(s, "_ir", s).axis for s in sbp if ir_sbp.is_split(getattr(s, "_ir", s))})
    mesh_text = "" if len(mesh) == 1 else " (mesh %s)" % " x ".join(map(str, mesh))
    head = "%s%s on %s ranks %s%s, sbp %r" % (shape, " " + dtype if dtype else "", pl.type, pl.ranks.tolist(), mesh_text,
                                               tuple(sbp))
    lines = [head]
    empty = [h for ranges, holders, _ in blocks if _is_empty(ranges, shape) for h in holders]
    blocks = [b for b in blocks if not _is_empty(b[0], shape)]
    if len(split_dims) > 2:  # more than a table can show: one line per block
        for ranges, holders, partial in blocks:
            lines.append("  [%s]  %s" % (", ".join("%d:%d" % r for r in ranges), _cell_text(holders, partial)))
    else:
        if not shape:
            row_dim = col_dim = None
        elif len(split_dims) == 2:
            row_dim, col_dim = split_dims
        elif len(split_dims) == 1 and split_dims[0] == 0 and len(shape) > 1:
            row_dim, col_dim = 0, None
        elif len(split_dims) == 1:
            row_dim, col_dim = None, split_dims[0]
        else:
            row_dim, col_dim = (0 if len(shape) > 1 else None), len(shape) - 1
        row_ranges = sorted({b[0][row_dim] for b in blocks}) if row_dim is not None else [None]
        col_ranges = sorted({b[0][col_dim] for b in blocks}) if col_dim is not None else [None]
        cell = {}
        for ranges, holders, partial in blocks:
            key = (ranges[row_dim] if row_dim is not None else None, ranges[col_dim] if col_dim is not None else None)
            cell[key] = _cell_text(holders, partial)
        width = max(len(t) for t in cell.values()) + 2
        col_heads = [_range_text(c) if c is not None else "all" for c in col_ranges]
        width = max([width] + [len(h) + 2 for h in col_heads])
        if row_dim is not None:
            prefix = "dim %d:" % row_dim
            texts = [_range_text(r) for r in row_ranges]
            span = max(len(t) for t in texts)
            row_heads = [(prefix if i == 0 else " " * len(prefix)) + " " + t.rjust(span) for i, t in enumerate(texts)]
        else:
            row_heads = [""]
        left = max(len(h) for h in row_heads) + 2
        if col_dim is not None:
            lines.append(" " * left + " dim %d:" % col_dim)
            lines.append(" " * left + " " + " ".join(h.center(width) for h in col_heads))
        bar = "\u2500" * width
        lines.append(" " * left + "\u250c" + "\u252c".join([bar] * len(col_ranges)) + "\u2510")
        for i, r in enumerate(row_ranges):
            texts = [cell.get((r, c), "").center(width) for c in col_ranges]
            lines.append(row_heads[i].ljust(left) + "\u2502" + "\u2502".join(texts) + "\u2502")
            if i < len(row_ranges) - 1:
                lines.append(" " * left + "\u251c" + "\u253c".join([bar] * len(col_ranges)) + "\u2524")
        lines.append(" " * left + "\u2514" + "\u2534".join([bar] * len(col_ranges)) + "\u2518")
    if empty:
        lines.append("rank%s %s: an empty piece (fewer elements than pieces)"
                     % ("" if len(empty) == 1 else "s", ", ".join(map(str, empty))))
    partial_axes = blocks[0][2] if blocks else ()
    if partial_axes:
        lines.append("\u03a3: partial_sum over mesh axis %s: those ranks hold addends whose sum is the block"
                     % ", ".join(map(str, partial_axes)))
    return "\n".join(lines)


def visualize_sharding(tensor_or_shape, placement=None, sbp=None, file=None):
    """Prints which rank holds which block of a global tensor (or of `shape` laid out by `placement` and `sbp`),
    once per job: on the first rank."""
    text = sharding_text(tensor_or_shape, placement, sbp)
    from oneflow_compat.comm import world

    if world.job_rank() == 0:
        print(text, file=file or sys.stdout)
