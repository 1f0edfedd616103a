"""The project's own notices to the user (the CPU fallback of a GPU request, dataset downloads, …), through `logging`.

Messages that OneFlow itself printed (legacy deprecation warnings, watch output, "File mnist.npz already exist") stay
plain prints where OneFlow printed them; everything this project adds goes to the logger `oneflow_compat`, as a
library's log should:

* the logger has a `NullHandler` and no level of its own: the application's logging configuration decides (by
  default the root's WARNING: warnings show, informational records do not);
* while the application has configured no handler that would receive a record (no `logging.basicConfig()`, no
  handler on `oneflow_compat` or its parents), the project's own stderr handler prints it as
  `oneflow_compat: <message>` — no level name in the text, and once per job: on the first rank only, unless the
  record concerns this rank alone (`this_rank=True`);
* silence: `logging.getLogger("oneflow_compat").setLevel(logging.ERROR)`; more: `.setLevel(logging.INFO)`.

One notice per fact: callers keep their own "already said" flags (`backend/devices.py`), so a fact met again (or
met through two roads, such as `gpu_device_num` and a "gpu" placement) is said once per process.
"""
import logging
import sys

LOGGER_NAME = "oneflow_compat"

logger = logging.getLogger(LOGGER_NAME)


class _StderrHandler(logging.Handler):
    """Prints records to stderr while no handler of the application would receive them (as `logging.lastResort`
    does for libraries without a handler, but once per job and with the project's name before the message)."""

    is_oneflow_compat_fallback = True  # survives a reload of this module, unlike the class itself

    def emit(self, record):
        if _another_handler_receives():
            return
        if not (getattr(record, "this_rank", False) or _first_rank()):
            return
        try:
            stream = sys.stderr  # looked up per record: it may have been replaced (rank prefixes, test capture)
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:  # noqa: BLE001 (logging's own policy: a failing handler must not break the program)
            self.handleError(record)


def _is_ours(handler):
    return getattr(handler, "is_oneflow_compat_fallback", False) or isinstance(handler, logging.NullHandler)


def _another_handler_receives():
    node = logger
    while node is not None:
        if any(not _is_ours(h) for h in node.handlers):
            return True
        if not node.propagate:
            return False
        node = node.parent
    return False


def _first_rank():
    """Whether this process is the job's first rank (RANK of the launcher, else the MPI rank; a lone process is)."""
    from oneflow_compat.comm.launcher_env import LaunchEnvironmentError
    from oneflow_compat.comm.world import job_rank

    try:
        return job_rank() == 0
    except (ValueError, LaunchEnvironmentError):  # a bad launch environment is reported elsewhere; never hide
        return True


for _old in [h for h in logger.handlers if getattr(h, "is_oneflow_compat_fallback", False)
             or isinstance(h, logging.NullHandler)]:
    logger.removeHandler(_old)  # left by an earlier import of this module (reload): one of each only
logger.addHandler(logging.NullHandler())
_fallback = _StderrHandler()
_fallback.setFormatter(logging.Formatter(LOGGER_NAME + ": %(message)s"))
logger.addHandler(_fallback)


def notice(message, *args, this_rank=False):
    """An informational notice (shown where the application enables INFO for `oneflow_compat`)."""
    logger.info(message, *args, extra={"this_rank": this_rank})


def warn(message, *args, this_rank=False):
    """Something that does not run as the user asked (shown by default; hidden at level ERROR and above)."""
    logger.warning(message, *args, extra={"this_rank": this_rank})


def detail(message, *args):
    """A detail worth a log line for whoever asks for DEBUG (never shown by default)."""
    logger.debug(message, *args)


def progress_enabled():
    """Whether progress bars (tqdm, on stderr) are wanted: on the first rank, where warnings are shown."""
    return logger.isEnabledFor(logging.WARNING) and _first_rank()
