"""What a plan keeps alive while it runs: the registers it holds after each step (`runtime/plan.py` releases each
register right after the last step that reads it), variables' storage left out. It measures the runtime itself,
as it runs: `tracking(plan)` wraps the plan's steps for the calls made inside it and records, after each step,
the arrays its registers still hold (count and bytes, an array in several registers once) and the step's section (forward, backward, optimizer).

`Track.across_backward()` is what is held between the forward and the backward pass (after the last forward step,
before the first backward one): the activations kept for the backward. `Track.peak()` is the most bytes held
after any step. Activation checkpointing (`passes/checkpointing.py`) lowers both.
"""
import contextlib


def _nbytes(value):
    return int(getattr(value, "nbytes", 0) or 0)


class Track:
    def __init__(self):
        self.after = []  # per step run: (section, registers held, bytes held)

    def across_backward(self):
        """(registers, bytes) held after the last forward step of the first micro-batch run."""
        last = None
        for section, count, nbytes in self.after:
            if section == "forward":
                last = (count, nbytes)
            elif last is not None:
                return last
        raise ValueError("the plan ran no forward step followed by a backward one")

    def peak(self):
        return max(nbytes for _, _, nbytes in self.after)


@contextlib.contextmanager
def tracking(plan):
    """Records what `plan` holds after each step of the calls made inside the block (see the module docstring)."""
    track = Track()
    regs = plan.regs
    keep = {reg for reg, _, _ in plan.var_slots}
    others = [r for r in range(len(regs)) if r not in keep]
    original = list(plan.steps)

    def wrap(step, section):
        def tracked():
            step()
            # one array in several registers (an identity's output is its input) is counted once
            held = {id(regs[r]): regs[r] for r in others if regs[r] is not None}
            track.after.append((section, len(held), sum(_nbytes(v) for v in held.values())))
        return tracked

    plan.steps[:] = [wrap(step, op.section) for step, op in zip(original, plan.step_ops)]
    try:
        yield track
    finally:
        plan.steps[:] = original
