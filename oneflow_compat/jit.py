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


def _script_if_tracing(fn):
    """torch.jit's decorator that scripts `fn` only while tracing: nothing is ever traced here, so `fn` itself.
    (flowvision 0.2.2's `ops/boxes.py` decorates with it at import; OneFlow 0.9's jit package lacks it, later
    OneFlow releases align it with torch.)"""
    return fn


def unused(fn):
    """torch.jit.unused: marks a method the compiler skips; without a compiler, the method itself."""
    return fn
