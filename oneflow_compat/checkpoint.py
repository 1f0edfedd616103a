"""`flow.checkpoint.save/get`, `flow.load_variables`, `flow.get_all_variables` (model IO v2, legacy-api.md §2.9).

Every entry point first initializes the session (compiling all jobs) as in v0.3. Saved folders hold the full
logical tensor of each variable whatever its placement and split; under MPI only rank 0 writes."""
import numpy as np

from oneflow_compat.framework import checkpoint_format as fmt
from oneflow_compat.framework import session as sess


def _session():
    s = sess.default_session()
    s.try_init()
    s.sync()
    return s


class VariableBlob:
    """A variable of the session as returned by `flow.get_all_variables()` (host copy of the full value)."""

    def __init__(self, session, spec):
        self._session, self._spec = session, spec

    @property
    def shape(self):
        return self._spec.shape

    @property
    def dtype(self):
        return self._spec.dtype

    @property
    def name(self):
        return self._spec.name

    def numpy(self):
        return self._session.vars.get_full(self._spec)

    def __repr__(self):
        return "VariableBlob(name=%s, shape=%s, dtype=%s)" % (self.name, self.shape, self.dtype.name)


def get_all_variables():
    s = _session()
    return {name: VariableBlob(s, spec) for name, spec in s.vars.specs.items()}


def _tensors(var_dict):
    if var_dict is None:
        var_dict = get_all_variables()
    return {name: (v.numpy() if hasattr(v, "numpy") else np.asarray(v)) for name, v in var_dict.items()}


def save(path, var_dict=None):
    """`flow.checkpoint.save(path)`: refused if `path` is a file or a non-empty folder, as OneFlow refused it (its
    message, then one sentence naming `flow.checkpoint.replace`, since re-running a training script that saves to
    a fixed folder is the usual way to meet it)."""
    s = _session()
    tensors = _tensors(var_dict)

    def write():
        try:
            fmt.save_tensors(path, tensors)
        except AssertionError as e:
            if fmt.is_refused_existing(e):
                raise AssertionError("%s %s" % (e, REPLACE_HINT.format(path=path))) from None
            raise

    fmt.write_on_rank0(s.runtime.comm, path, write)


REPLACE_HINT = ("To write over an earlier checkpoint, call flow.checkpoint.replace({path!r}) instead (oneflow_compat: "
                "the new checkpoint is written beside the old one and swapped in), or remove the folder first.")


def replace(path, var_dict=None):
    """Project extension (not in OneFlow): `save`, except that an earlier checkpoint at `path` is replaced safely —
    the new one is written completely beside it and swapped in, so a crash leaves the old or the new one, never
    neither. A folder that is not a checkpoint is still refused."""
    s = _session()
    tensors = _tensors(var_dict)
    fmt.write_on_rank0(s.runtime.comm, path, lambda: fmt.replace_tensors(path, tensors))


def get(path):
    _session()
    return fmt.load_checkpoint_dir(path)


def load_variables(value_dict, ignore_mismatch=True):
    s = _session()
    checked = []
    for name, value in value_dict.items():
        spec = s.vars.get(name)
        if spec is None:
            if not ignore_mismatch:
                raise RuntimeError('"%s" is not a variable name' % name)
            continue
        if isinstance(value, VariableBlob):
            value = value.numpy()
        checked.append((spec, fmt.check_assignable(name, spec.shape, spec.dtype.np, value)))
    # only after every value passed its checks is anything assigned: a failed call changes no variable
    for spec, array in checked:
        s.vars.set_full(spec, array)
