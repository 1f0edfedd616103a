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


def save(path, var_dict=None):
    s = _session()
    if var_dict is None:
        var_dict = get_all_variables()
    tensors = {name: (v.numpy() if hasattr(v, "numpy") else np.asarray(v)) for name, v in var_dict.items()}
    comm = s.runtime.comm
    error = None
    if comm.rank == 0:
        try:
            fmt.save_tensors(path, tensors)
        except BaseException as e:  # every rank must learn of the failure, not only the writer
            error = e
    if comm.size > 1:
        msg = comm.bcast_object(None if error is None else "%s: %s" % (type(error).__name__, error), root=0)
        if msg is not None and error is None:
            raise RuntimeError("saving checkpoint %s failed on rank 0: %s" % (path, msg))
    if error is not None:
        raise error


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
