"""`flow.regularizers.*` (legacy-api.md §2.8): per-variable L1/L2 terms added to the gradient before the update,
`g + l1·sign(w) + l2·w` (applied by `oneflow_compat.kernels.optim.add_regularization`)."""


class RegularizerConf:
    """The l1/l2 coefficients of a variable's regularizer (OneFlow's `RegularizerConf.l1_l2_conf`)."""

    __slots__ = ("l1", "l2")

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = float(l1)
        self.l2 = float(l2)

    def __eq__(self, other):
        return isinstance(other, RegularizerConf) and (self.l1, self.l2) == (other.l1, other.l2)

    def __hash__(self):
        return hash((self.l1, self.l2))

    def __repr__(self):
        return "RegularizerConf(l1=%r, l2=%r)" % (self.l1, self.l2)


def l1_l2(l1=0.01, l2=0.01):
    return RegularizerConf(l1=l1, l2=l2)


def l1(l=0.01):  # noqa: E741 - the legacy keyword is `l`
    return RegularizerConf(l1=l, l2=0.0)


def l2(l=0.01):  # noqa: E741
    return RegularizerConf(l1=0.0, l2=l)


# Legacy module-level names (`regularizer_util.l1_l2_regularizer` …) for code that imported them directly.
l1_l2_regularizer = l1_l2
l1_regularizer = l1
l2_regularizer = l2
