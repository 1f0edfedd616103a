"""The functions the runtime supplies for the ops that declare a `runtime_hook` (`ops/registry.py`): ops whose
function needs the runtime itself, which the ops layer may not import. Every plan builds its collective steps with
`build_collective`: the hook's function where the op names one, else the op's own `build_collective`."""
from oneflow_compat.runtime import boxing, watch

# "watch": hands the full logical value to a Python handler; "boxing": the transition table's executors
RUNTIME_HOOKS = {"watch": watch.make_watch_fn, "boxing": boxing.hook}


def build_collective(op, session):
    """The function of a collective op: callable(*all local input pieces) -> tuple of all local output pieces."""
    hook = op.defn.runtime_hook
    build = RUNTIME_HOOKS[hook] if hook is not None else op.defn.build_collective
    return build(op, session)
