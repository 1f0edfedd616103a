"""The project's own notices to the user (CPU fallback for "gpu", dataset downloads, …), through `logging`.

Messages that OneFlow itself printed (legacy deprecation warnings, watch output, …) stay plain prints where OneFlow
printed them; everything this project adds goes to the logger `oneflow_compat`, so that a user can silence,
redirect or format it like any other library's log:

* silence: `logging.getLogger("oneflow_compat").setLevel(logging.ERROR)` (WARNING keeps the warnings and drops
  the informational notices and the download progress);
* by default (the application configured no logging), a fallback handler prints the bare message to stderr —
  once per program under MPI (rank 0; every rank with `ONEFLOW_COMPAT_OUTPUT=all` or `raw`), like stdout;
* once the application has a handler of its own (e.g. `logging.basicConfig()`), the records go there only.

The logger's level is set to INFO at import unless the user already set one, so that the informational notices
show by default whatever the root logger's level.
"""
import logging
import sys

LOGGER_NAME = "oneflow_compat"

logger = logging.getLogger(LOGGER_NAME)


class _FallbackHandler(logging.Handler):
    """Prints records to stderr while no other handler would receive them (as `logging.lastResort` does, but
    for every level the logger lets through, and on one rank only)."""

    is_oneflow_compat_fallback = True  # survives a reload of this module, unlike the class itself

    def emit(self, record):
        if _another_handler_receives() or not _shown_on_this_rank():
            return
        try:
            stream = sys.stderr  # looked up per record: it may have been replaced (rank prefixes, test capture)
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:  # noqa: BLE001 (logging's own policy: a failing handler must not break the program)
            self.handleError(record)


def _another_handler_receives():
    node = logger
    while node is not None:
        if any(not getattr(h, "is_oneflow_compat_fallback", False) for h in node.handlers):
            return True
        if not node.propagate:
            return False
        node = node.parent
    return False


def _shown_on_this_rank():
    from oneflow_compat.comm.environment import detect_mpi_world
    from oneflow_compat.comm.output import output_mode

    try:
        world = detect_mpi_world()
    except ValueError:  # an inconsistent launcher environment is reported elsewhere; never hide a notice for it
        return True
    return world is None or world[0] == 0 or output_mode() in ("all", "raw")


for _old in [h for h in logger.handlers if getattr(h, "is_oneflow_compat_fallback", False)]:
    logger.removeHandler(_old)  # left by an earlier import of this module (reload): one fallback only
_fallback = _FallbackHandler()
_fallback.setFormatter(logging.Formatter("%(message)s"))
logger.addHandler(_fallback)
if logger.level == logging.NOTSET:
    logger.setLevel(logging.INFO)


def notice(message, *args):
    """An informational notice (hidden at level WARNING and above)."""
    logger.info(message, *args)


def warn(message, *args):
    """A notice about something that does not run as the user asked (hidden at level ERROR and above)."""
    logger.warning(message, *args)


def progress_enabled():
    """Whether progress lines (written in place on stderr) are wanted: where informational notices are shown."""
    return logger.isEnabledFor(logging.INFO) and _shown_on_this_rank()
