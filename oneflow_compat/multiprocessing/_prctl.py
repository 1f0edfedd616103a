"""`_prctl_pr_set_pdeathsig` (OneFlow 0.9 binds it in C++): the signal this process gets when its parent dies,
through prctl(PR_SET_PDEATHSIG) on Linux; elsewhere nothing."""
import ctypes
import sys

_PR_SET_PDEATHSIG = 1


def set_pdeathsig(sig):
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):  # no prctl in this C library
        pass
