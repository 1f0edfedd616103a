"""`oneflow.distributions` (OneFlow 0.9): the `Distribution` base and `Categorical`, whose samples are
`flow.multinomial`'s (with replacement)."""
from oneflow_compat.distributions.categorical import Categorical
from oneflow_compat.distributions.distribution import Distribution

__all__ = ["Categorical", "Distribution"]
