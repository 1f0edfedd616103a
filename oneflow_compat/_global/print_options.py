"""`flow.set_printoptions`: how tensors print (precision, threshold, edgeitems, linewidth, sci_mode, profile), the
options `printing.py` reads on every repr.

Facts from OneFlow v0.9.0 `python/oneflow/framework/tensor_str.py`: the defaults (precision 4, threshold 1000,
edgeitems 3, the line width the terminal's columns until set), the profiles ("default": 4 / 1000 / 3 / 80,
"short": 2 / 1000 / 2 / 80, "full": 4 / inf / 3 / 80), `sci_mode` reset to the given value (None: chosen per
tensor) on every call, and setting a profile or a line width ending the automatic line width.
"""
import math

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


class _PrintOptions:
    def __init__(self):
        self.precision = 4
        self.threshold = 1000
        self.edgeitems = 3
        self.userset_linewidth = None
        self.sci_mode = None
        self.autoset_linewidth = True


PRINT_OPTS = _PrintOptions()


def _check_int(name, value, least):
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError("set_printoptions(): %s must be an integer >= %d, got %r" % (name, least, value))


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Sets how tensors print: `precision` digits after the point (default 4), summarization (`...`) beyond
    `threshold` elements (default 1000) showing `edgeitems` items at each end of each dimension (default 3),
    `linewidth` characters per line (default the terminal's columns), `profile` one of "default", "short",
    "full" (the others override it), `sci_mode` True/False forcing or forbidding scientific notation (None:
    chosen per tensor)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError("set_printoptions(): profile must be one of %s, got %r"
                             % (", ".join(sorted(_PROFILES)), profile))
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.userset_linewidth = \
            _PROFILES[profile]
    if precision is not None:
        _check_int("precision", precision, 0)
        PRINT_OPTS.precision = precision
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or threshold < 0:
            raise ValueError("set_printoptions(): threshold must be a number >= 0, got %r" % (threshold,))
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        _check_int("edgeitems", edgeitems, 1)
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        _check_int("linewidth", linewidth, 1)
        PRINT_OPTS.userset_linewidth = linewidth
    if sci_mode is not None and not isinstance(sci_mode, bool):
        raise ValueError("set_printoptions(): sci_mode must be True, False or None, got %r" % (sci_mode,))
    PRINT_OPTS.sci_mode = sci_mode
    if profile is not None or linewidth is not None:
        PRINT_OPTS.autoset_linewidth = False
