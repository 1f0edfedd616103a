"""`flow.watch` / `flow.watch_diff` handlers: called once per job execution with the full logical value."""
import inspect
import traceback

from oneflow_compat.framework import annotations as tp
from oneflow_compat.ir import sbp as S
from oneflow_compat.runtime import results


def check_handler(handler_or_prompt):
    """Returns a one-argument callable; a str prompt or None gives the default printing handler."""
    if handler_or_prompt is None or isinstance(handler_or_prompt, str):
        prompt = handler_or_prompt

        def default(value):
            if prompt is not None:
                print(prompt)
            print(value)
        return default, None
    if not callable(handler_or_prompt):
        raise TypeError("watch handler must be a callable or a prompt string, got %r" % (handler_or_prompt,))
    params = list(inspect.signature(handler_or_prompt).parameters.values())
    if not (len(params) == 1):
        raise AssertionError("watch callback should accept only one parameter")
    ann = params[0].annotation
    if ann is inspect.Parameter.empty:
        kind = "local_blob"
    elif ann is tp.Numpy:
        kind = "numpy"
    elif ann is tp.ListNumpy:
        kind = "list_numpy"
    else:
        raise NotImplementedError("invalid watch callback paremeter annotation %s found. candidate annotations: "
                                  "oneflow.typing.Numpy, oneflow.typing.ListNumpy. " % (ann,))
    return handler_or_prompt, kind


def make_watch_fn(op, session):
    rt = session.runtime
    x = op.inputs[0]
    handler, kind = op.attrs["handler"], op.attrs["kind"]
    pl = op.placement
    sbp = op.sbp_in[0]
    indices = rt.local_indices(pl)
    mirrored = sbp == S.M
    if kind == "numpy" and mirrored:
        raise TypeError("only fixed shaped blob compatible to oneflow.typing.Numpy. "
                        "you can change annotation to oneflow.typing.ListNumpy ")

    def watch(*pieces):
        if mirrored:
            value = results.gather_mirrored_pieces(rt, list(pieces), pl)
        else:
            value = rt.assemble(dict(zip(indices, pieces)), x.shape, x.dtype.np, pl, sbp)
        arg = results.leaf_value(value, kind or "numpy", mirrored)
        try:
            handler(arg)
        except Exception:
            print(traceback.format_exc())
            raise

    return watch


def make_one_device_watch_fn(op, session):
    """The watch of legacy eager mode, where every op runs on one logical device: the handler gets the value the
    op read (as a one-element list when mirrored)."""
    from oneflow_compat.backend import devices

    handler, kind = op.attrs["handler"], op.attrs["kind"]
    mirrored = op.view == "mirrored"

    def watch(piece):
        value = devices.to_host(piece)
        handler(results.leaf_value(value if not mirrored else [value], kind or "numpy", mirrored))
        return ()

    return watch
