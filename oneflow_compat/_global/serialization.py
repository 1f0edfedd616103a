"""`flow.save` / `flow.load` for both API generations, told apart by their arguments.

* Legacy (v0.3): `flow.save(path, var_dict=None)` / `flow.load(path)` — the checkpoint of job-function
  variables (`oneflow_compat/checkpoint.py`), used when the first argument of `save` is a path, and by `load`
  while the legacy API is in use (a job function is defined, or eager execution was enabled).
* Modern (0.5–0.9): `flow.save(obj, path)` / `flow.load(path)` of a state dict. A dict of tensors (what
  `Module.state_dict()` returns) is written as OneFlow 0.5 wrote it, the legacy checkpoint layout — one folder per
  tensor with `out` (raw little-endian bytes) and `meta` (shape and dtype), then `snapshot_done` — so either API
  can read the other's files. Anything else (an optimizer's state dict, nested containers, numbers, one tensor)
  keeps its tensors in the same per-tensor folders and its structure in a `structure.pickle` file (a pickle
  restricted on load to plain containers and the tensor references).

Saving global tensors is a collective (their values are gathered): rank 0 (or `global_dst_rank`) writes, all ranks
agreeing on the outcome. Local tensors are each process's own, as in OneFlow 0.9: in a job of several ranks every
rank that calls `save` writes its own folder, with no communication, ranks saving to one path taking turns (a
lock on the folder that holds it). Every write is atomic (a temporary folder renamed into place); an existing
earlier save at `path` is replaced only once the new one is complete (the two folders are then swapped). Loaded
tensors are local (or, with `global_src_rank`, global: that rank's value broadcast on every rank).
"""
import collections
import io
import os
import pickle

from oneflow_compat.framework import checkpoint_format as fmt
from oneflow_compat.ir import dtypes
from oneflow_compat.runtime import global_eager
from oneflow_compat._global.tensor import Tensor

STRUCTURE_FILENAME = "structure.pickle"


def _legacy_in_use():
    from oneflow_compat.framework import client_mode, session

    s = session.default_session()
    return client_mode.current() == client_mode.LEGACY or bool(s.job_functions) or s.eager


# --- save -------------------------------------------------------------------------------------------------------
def save(obj=None, path=None, var_dict=None, global_dst_rank=None):
    """`flow.save(obj, path)` (state dicts) or the legacy `flow.save(path, var_dict=None)`; see the module
    docstring."""
    if obj is None or isinstance(obj, (str, os.PathLike)):
        from oneflow_compat import checkpoint

        target = obj if obj is not None else path
        variables = var_dict if var_dict is not None else (path if obj is not None else None)
        return checkpoint.save(target, variables)
    if path is None:
        raise TypeError("flow.save(obj, path): path is missing")
    _refuse_graph(obj, path)
    comm = global_eager.comm()
    if global_dst_rank is not None:
        assert isinstance(global_dst_rank, int), \
            f"global_dst_rank expected type int, but got {type(global_dst_rank)}."
        assert 0 <= global_dst_rank < comm.size, \
            f"out of range (expected to be in range of [0, {comm.size}), but got {global_dst_rank})."
    tensors, extra = _flatten(obj)
    local = not any(t.is_global for t in tensors.values())
    arrays = collections.OrderedDict((name, _stored(t)) for name, t in tensors.items())  # collective for globals
    if comm.size > 1 and global_dst_rank is None and local:
        # local tensors are this process's own (OneFlow 0.9): each rank that calls save writes its own folder, no
        # collective; ranks saving to one path take turns (the last one's save stays, whole)
        _check_parent(os.fspath(path))
        with fmt.folder_lock(path):
            _write(os.fspath(path), arrays, extra)
        return
    writer = 0 if global_dst_rank is None else global_dst_rank
    fmt.write_on_rank0(comm, path, lambda: _write(os.fspath(path), arrays, extra), writer=writer)


def _refuse_graph(obj, path):
    """`flow.save(graph, path)`: OneFlow 0.9 exports a compiled nn.Graph for serving — its job as MLIR
    (`SaveJobToIR`) and its state tensors — and a build without MLIR answers `SaveJobToIR is only supported
    WITH_MLIR` as a NotImplementedError (oneflow/core/job/job_ir.cpp, nn/graph/graph.py @ v0.9.0). Nothing here
    compiles to OneFlow's MLIR dialect, so this is that build's answer, with what saves the graph's state instead;
    nothing is written (OneFlow's refusal left an empty folder)."""
    from oneflow_compat._global.graph import Graph

    if not isinstance(obj, Graph):
        return
    if not obj._is_compiled:  # OneFlow 0.9's check and words, before anything else
        raise RuntimeError("graph must be compiled first.")
    raise NotImplementedError(
        "flow.save(%s, %r): exporting an nn.Graph for deployment writes its job as OneFlow MLIR (SaveJobToIR), "
        "and SaveJobToIR is only supported WITH_MLIR: oneflow_compat has no MLIR. flow.save(graph.state_dict(), "
        "path) saves the graph's parameters, buffers and optimizer states." % (obj.name, os.fspath(path)))


def _stored(t):
    """What the files hold of tensor `t`: its array; with its dtype where numpy has none (bfloat16: float32 bytes of
    its values, meta data_type kBFloat16, as OneFlow 0.9's flow.save writes them) or where the legacy map of numpy
    dtypes has none (bool: a byte an element, meta data_type kBool)."""
    array = t.numpy()
    return (array, t.dtype) if t.dtype is dtypes.bfloat16 or t.dtype is dtypes.bool_ else array


def _is_flat_state_dict(obj):
    return (isinstance(obj, collections.abc.Mapping) and len(obj) > 0
            and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items())
            and all(_valid_name(k) for k in obj))


def _valid_name(name):
    try:
        fmt._check_variable_name(name)
    except ValueError:
        return False
    return name != STRUCTURE_FILENAME and name != fmt.SNAPSHOT_DONE_FILENAME and not name.startswith(".")


def _flatten(obj):
    """({folder name: tensor}, {file name: bytes}) to write for `obj`."""
    if _is_flat_state_dict(obj):
        return collections.OrderedDict(obj), {}
    names = {}  # id(tensor) -> folder name, named by the tensor's path in the containers where possible
    tensors = collections.OrderedDict()

    def visit(x, path):
        if isinstance(x, Tensor):
            if id(x) not in names:
                name = ".".join(path) if path else "tensor"
                if not _valid_name(name) or name in tensors:
                    name = "tensor_%d" % len(tensors)
                names[id(x)] = name
                tensors[name] = x
        elif isinstance(x, collections.abc.Mapping):
            for k, v in x.items():
                visit(v, path + [str(k)])
        elif isinstance(x, (list, tuple)):
            for i, v in enumerate(x):
                visit(v, path + [str(i)])

    visit(obj, [])

    class _Pickler(pickle.Pickler):
        def persistent_id(self, x):
            if not isinstance(x, Tensor):
                return None
            if id(x) not in names:  # held by an object: its class would have to be unpickled (code) to load it
                raise TypeError("a tensor is held by an object of another type than dict, list or tuple; save "
                                "plain containers of tensors, e.g. a Module's state_dict() (flow.load never "
                                "unpickles code)")
            return ("tensor", names[id(x)])

    buffer = io.BytesIO()
    try:
        _Pickler(buffer, protocol=4).dump(obj)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        raise TypeError("flow.save: cannot save %r: %s" % (type(obj).__name__, e)) from None
    return tensors, {STRUCTURE_FILENAME: buffer.getvalue()}


def _is_earlier_save(path):
    entries = set(os.listdir(path))
    return fmt.SNAPSHOT_DONE_FILENAME in entries or STRUCTURE_FILENAME in entries


def _check_parent(path):
    """A clear error when an existing ancestor of `path` is a file (the folder cannot be created under it)."""
    head = os.path.dirname(os.path.abspath(path))
    while head and not os.path.exists(head):
        head = os.path.dirname(head)
    if head and not os.path.isdir(head):
        raise NotADirectoryError("flow.save: cannot save to '%s': '%s' is a file, not a directory"
                                 % (path, os.path.relpath(head) if not os.path.isabs(path) else head))


def _write(path, arrays, extra):
    _check_parent(path)
    if os.path.isdir(path) and os.listdir(path) and _is_earlier_save(path):
        # replace an earlier save: the new one is written completely beside it, then swapped in
        fmt.replace_tensors(path, arrays, extra_files=extra)
    else:
        fmt.save_tensors(path, arrays, extra_files=extra)  # refuses a file or a folder of other things


# --- load -------------------------------------------------------------------------------------------------------
class _Unpickler(pickle.Unpickler):
    """Plain containers and tensor references only: a saved structure never runs code when loaded."""

    _ALLOWED = {("collections", "OrderedDict"): collections.OrderedDict}

    def __init__(self, file, load_tensor):
        super().__init__(file)
        self._load_tensor = load_tensor

    def find_class(self, module, name):
        found = self._ALLOWED.get((module, name))
        if found is None:
            raise pickle.UnpicklingError("flow.load: %s.%s is not allowed in a saved structure" % (module, name))
        return found

    def persistent_load(self, pid):
        kind, name = pid
        if kind != "tensor":
            raise pickle.UnpicklingError("flow.load: unknown reference %r" % (pid,))
        return self._load_tensor(name)


def load(path, global_src_rank=None, map_location=None, *, support_pytorch_format=True):
    """`flow.load(path)`: what `flow.save` wrote (see the module docstring); the legacy checkpoint reader while
    the legacy API is in use; a FILE written by `torch.save` (OneFlow 0.9: `support_pytorch_format`, read by torch,
    see `torch_checkpoint`)."""
    if os.path.isfile(os.fspath(path)):
        if not support_pytorch_format:  # OneFlow 0.9: no load method takes a file then
            raise NotImplementedError("No valid load method found for {}".format(os.fspath(path)))
        from oneflow_compat._global import torch_checkpoint

        place = None if global_src_rank is None and map_location is None else \
            (lambda t: _as_tensor(t.numpy(), global_src_rank, map_location))
        return torch_checkpoint.load_torch_file(os.fspath(path), place)
    if _legacy_in_use() and global_src_rank is None and map_location is None:
        from oneflow_compat import checkpoint

        return checkpoint.get(path)
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise FileNotFoundError("Directory {} doesn't exist!".format(path))

    def tensor_of(blob):
        if not blob.is_bound:
            raise ValueError("flow.load: %s has no meta file (legacy model IO): its shape and dtype are unknown; "
                             "load it into a legacy job's variables with flow.load_variables" % blob.var_dir)
        return _as_tensor(blob.numpy(), global_src_rank, map_location,
                          blob.dtype if blob.dtype is dtypes.bfloat16 else None)

    structure = os.path.join(path, STRUCTURE_FILENAME)
    if os.path.isfile(structure):
        with open(structure, "rb") as f:
            payload = f.read()
        return _Unpickler(io.BytesIO(payload),
                          lambda name: tensor_of(fmt.FileBackendVariableBlob(os.path.join(path, name)))).load()
    found = fmt.load_checkpoint_dir(path)
    if isinstance(found, fmt.FileBackendVariableBlob):
        return tensor_of(found)
    return collections.OrderedDict((name, tensor_of(blob)) for name, blob in found.items())


def _as_tensor(array, global_src_rank, map_location, dtype=None):
    from oneflow_compat import sbp as flow_sbp
    from oneflow_compat._global import creation
    from oneflow_compat._global.placement import placement

    device = None
    if map_location is not None:
        device = map_location if isinstance(map_location, str) else getattr(map_location, "type", None)
    t = creation.tensor(array, dtype=dtype, device=device)  # (bfloat16: its float32 bytes, rounded as it is made)
    if global_src_rank is None:
        return t
    kind = "cuda" if device is not None and str(device).startswith("cuda") else "cpu"
    # the source rank's value is the one every rank gets (each rank read the files, but only its copy counts)
    t = t.to_global(placement(kind, [int(global_src_rank)]), flow_sbp.broadcast)
    return t.to_global(placement.all(kind), flow_sbp.broadcast)
