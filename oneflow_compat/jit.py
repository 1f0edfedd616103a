"""`oneflow.jit` (OneFlow 0.9, `jit/_script.py`): `script` and `ignore` exist only to align with torch.jit; they
warn and return what they were given. `is_scripting` / `is_tracing` answer False (code written for torch.jit asks
them)."""
import warnings


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    warnings.warn("The oneflow.jit.script interface is just to align the torch.jit.script interface and has no "
                  "practical significance.")
    return obj


def ignore(drop=False, **kwargs):
    warnings.warn("The oneflow.jit.ignore interface is just to align the torch.jit.ignore interface and has no "
                  "practical significance.")

    def decorator(fn):
        return fn

    return decorator


def is_scripting():
    return False


def is_tracing():
    return False
