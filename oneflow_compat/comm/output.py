"""One program's output from N ranks: stdout appears once, stderr stays visible and says which rank wrote it.

Under MPI with size > 1 (every rank runs the script, SPMD):
* ranks != 0 have stdout sent to /dev/null — both Python's `sys.stdout` and file descriptor 1, so output from C
  libraries and child processes is silenced as well;
* with `ONEFLOW_COMPAT_OUTPUT=all` nothing is silenced and every rank's stdout lines start with `[rank r] `;
* with `ONEFLOW_COMPAT_OUTPUT=raw` (what `python -m oneflow.distributed.launch` sets, OneFlow's behaviour) every
  rank writes to its stdout and stderr untouched, its stdout one whole print at a time (`WholeLinesWriter`);
* stderr is never silenced; on ranks != 0 its lines start with `[rank r] ` (Python-level writes only);
* a rank about to abort the job first waits until the launcher has read what it wrote (`wait_until_output_is_read`).
"""
import io
import os
import sys
import time

OUTPUT_ENV = "ONEFLOW_COMPAT_OUTPUT"

_configured = None          # (rank, size, mode) once set up; makes setup_rank_output idempotent
_unprefixed_stderr = None   # the stderr stream as it was before any prefixing


class PrefixedLineWriter(io.TextIOBase):
    """A text stream that writes `prefix` at the start of every line to an underlying text stream.

    Complete lines go out in one write + flush, so that the lines of different ranks, merged by the launcher,
    never interleave mid-line; a partial line waits for its end (or for `flush()`).
    """

    def __init__(self, stream, prefix):
        super().__init__()
        self.stream = stream
        self.prefix = prefix
        self._partial = ""           # text of the current, unfinished line
        self._partial_started = False  # whether a piece of the current line has already been flushed

    def write(self, text):
        if not text:
            return 0
        written = len(text)
        text = self._partial + text
        end = text.rfind("\n") + 1
        self._partial = text[end:]
        if end:
            lines = text[:end].splitlines(keepends=True)
            head = "" if self._partial_started else self.prefix
            self.stream.write(head + lines[0] + "".join(self.prefix + line for line in lines[1:]))
            self.stream.flush()
            self._partial_started = False
        return written

    def flush(self):
        if self._partial:
            self.stream.write(("" if self._partial_started else self.prefix) + self._partial)
            self._partial = ""
            self._partial_started = True
        self.stream.flush()

    def writable(self):
        return True

    def fileno(self):
        return self.stream.fileno()

    def isatty(self):
        return self.stream.isatty()

    @property
    def encoding(self):
        return getattr(self.stream, "encoding", "utf-8")

    @property
    def errors(self):
        return getattr(self.stream, "errors", "strict")


class WholeLinesWriter(PrefixedLineWriter):
    """The raw mode's stdout: what a rank writes goes out untouched, but only as whole lines, and the lines of one
    `print` in one write.

    A line-buffered stream flushes each write that holds a newline, and `print(text)` writes `text` and its "\n"
    separately, so a multi-line print (a tensor) went out as its lines plus an unfinished last line, and another
    rank's line could land in the middle of it (`...dtype=oneflow.float32)cpu:3, ...`). Here a write that does not
    end a line is held, its finished lines too, until a later write ends one (or `flush()`, or `HOLD_LIMIT`
    characters are waiting); then everything held goes out in one write + flush. A pipe (mpiexec relays through
    them) delivers one write of up to PIPE_BUF bytes unbroken; longer output still breaks only between lines.
    """

    HOLD_LIMIT = 1 << 16

    def __init__(self, stream):
        super().__init__(stream, "")

    def write(self, text):
        if not text:
            return 0
        self._partial += text
        if self._partial.endswith("\n"):
            self.stream.write(self._partial)
            self._partial = ""
            self.stream.flush()
        elif len(self._partial) > self.HOLD_LIMIT:
            end = self._partial.rfind("\n") + 1
            if end:
                self.stream.write(self._partial[:end])
                self._partial = self._partial[end:]
                self.stream.flush()
        return len(text)

    def flush(self):
        if self._partial:
            self.stream.write(self._partial)
            self._partial = ""
        self.stream.flush()

    def __getattr__(self, name):  # buffer, line_buffering, reconfigure, …: the underlying stream's
        if name == "stream":
            raise AttributeError(name)
        return getattr(self.stream, name)


def output_mode():
    """'all' (every rank's stdout, prefixed: `ONEFLOW_COMPAT_OUTPUT=all`), 'raw' (every rank's output untouched:
    `ONEFLOW_COMPAT_OUTPUT=raw`), else 'rank0'."""
    mode = os.environ.get(OUTPUT_ENV, "").strip().lower()
    return mode if mode in ("all", "raw") else "rank0"


def unprefixed_stderr():
    """The stderr stream without the rank prefix (for writers that add their own, like the failure hook)."""
    return _unprefixed_stderr if _unprefixed_stderr is not None else sys.stderr


def _silence_stdout():
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
    except OSError:
        pass  # no fd 1 (embedded interpreter): the Python-level redirection below still applies
    finally:
        os.close(devnull)
    sys.stdout = open(os.devnull, "w")


def setup_rank_output(rank, size):
    """Apply the output rules above for this process (no-op for size <= 1; calling it again changes nothing)."""
    global _configured, _unprefixed_stderr
    if size <= 1 or _configured is not None:
        return
    mode = output_mode()
    _configured = (rank, size, mode)
    if mode == "raw":
        # whole lines, as soon as a print is complete: the ranks' prints interleave, but not within one
        sys.stdout = WholeLinesWriter(sys.stdout)
        return
    prefix = "[rank %d] " % rank
    _unprefixed_stderr = sys.stderr
    if mode == "all":
        sys.stdout = PrefixedLineWriter(sys.stdout, prefix)
    elif rank != 0:
        _silence_stdout()
    if rank != 0:
        sys.stderr = PrefixedLineWriter(sys.stderr, prefix)


# MPI_Abort makes the launcher kill every rank at once, and the launcher may do that before it has read what the
# aborting rank just wrote into the pipes of its stdout/stderr: the failing rank's traceback, the one message that
# matters, was lost in a few % of failures under load. So that rank first waits, a bounded time, until the launcher
# has read its pipes empty. Where the unread byte count cannot be known, a short fixed pause stands in for it.
OUTPUT_DRAIN_LIMIT_S = 2.0
_OUTPUT_DRAIN_FALLBACK_S = 0.25


def _unread_bytes(fd):
    """Bytes written to `fd` that its reader has not taken yet: for a pipe or a socket, else 0; None when this
    platform cannot tell."""
    import fcntl
    import stat
    import struct
    import termios

    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return 0
    if stat.S_ISFIFO(mode):
        request = termios.FIONREAD      # Linux: on either end of a pipe, the bytes in the pipe
    elif stat.S_ISSOCK(mode):
        request = termios.TIOCOUTQ      # Linux SIOCOUTQ: bytes sent but not yet taken by the peer
    else:
        return 0                        # a terminal or a file: the write itself delivered it
    try:
        return struct.unpack("i", fcntl.ioctl(fd, request, b"\0\0\0\0"))[0]
    except OSError:
        return None


def wait_until_output_is_read(limit_s=OUTPUT_DRAIN_LIMIT_S):
    """Return once the launcher has read this process's stdout and stderr pipes (or after `limit_s`)."""
    deadline = time.monotonic() + limit_s
    pending = [1, 2]
    while pending:
        try:
            counts = [(fd, _unread_bytes(fd)) for fd in pending]
        except (ImportError, AttributeError):  # no fcntl/termios (not a POSIX system)
            counts = [(fd, None) for fd in pending]
        if any(n is None for _, n in counts):
            time.sleep(min(_OUTPUT_DRAIN_FALLBACK_S, max(0.0, deadline - time.monotonic())))
            return
        pending = [fd for fd, n in counts if n > 0]
        if pending:
            if time.monotonic() >= deadline:
                return
            time.sleep(0.002)
