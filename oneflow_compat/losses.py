"""`flow.losses.add_loss` (legacy optimizer API: marks a loss for `func_config.train.*`)."""
from oneflow_compat.framework.session import add_loss  # noqa: F401
