"""CuPy's host/device rules enforced on numpy, to find device bugs without a GPU.

`StrictArray` stands for a device array. Its data is a numpy array that only this module touches; to everything
else it behaves like a CuPy array:

* no implicit way to the host: `np.asarray(x)`, `np.array(x)`, `float(x)`, `int(x)`, `bool(x)`, `operator.index(x)`,
  `x.item()`, `x.tolist()`, `x.tobytes()` raise TypeError (CuPy refuses the first two; the others would be
  device -> host synchronisations, which a step must not make). `x.get()` and `asnumpy(x)` are the ways down;
* no mixing with host arrays: a numpy ufunc or function, or a function of the fake module, given a StrictArray and a
  numpy array (or a fake-module function given a numpy array alone) raises TypeError, as CuPy does; Python and numpy
  scalars mix freely. Indexing and item assignment accept host values (CuPy copies them up);
* it is not an `np.ndarray` (neither is a CuPy array), so `isinstance(x, np.ndarray)` checks see a device array.

A numpy subclass cannot refuse `np.asarray` (numpy takes a subclass's buffer without asking it), hence a wrapper.

`module()` is the array module: numpy's namespace with every function taking and returning StrictArrays, and
`asarray`/`array` as the way up (host data is copied). `install(monkeypatch, mode)` makes it what "gpu"
placements run on (`devices.array_module("gpu")`), with CUDA reported usable, in a fresh default session.

As a pytest plugin it runs whole test files that way (what the GPU machine's suite stage does for real):
`PYTHONPATH=tests pytest -p strict_device tests/test_x.py` (`STRICT_DEVICE_SYNCS=allow`: implicit
synchronisations allowed, for tests that read device values themselves). Tests that start child processes run
those on the CPU.
"""
import os
import types

import numpy as np
import pytest

IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array "
            "explicitly.")
SYNC = "implicit device -> host transfer (%s) of a device array: use `.get()` outside the step"
MODULE_NAME = "strict_device"


def _host_array_error(where):
    return TypeError("Unsupported type <class 'numpy.ndarray'> (a host array given to %s)" % where)


def _raw(value, where):
    """The numpy data of device arrays inside `value` (lists, tuples, dicts); host arrays are refused."""
    if isinstance(value, StrictArray):
        return value._data
    if isinstance(value, np.ndarray):
        raise _host_array_error(where)
    if isinstance(value, (list, tuple)):
        return type(value)(_raw(v, where) for v in value)
    if isinstance(value, dict):
        return {k: _raw(v, where) for k, v in value.items()}
    return value


def _lenient_raw(value):
    """As `_raw`, host arrays accepted (the ways up, indices)."""
    if isinstance(value, StrictArray):
        return value._data
    if isinstance(value, (list, tuple)):
        return type(value)(_lenient_raw(v) for v in value)
    return value


def _device(value):
    """Results as device arrays: numpy arrays and numpy scalars (CuPy returns 0-d arrays where numpy returns
    scalars)."""
    if isinstance(value, np.ndarray):
        return StrictArray(value)
    if isinstance(value, np.generic):
        return StrictArray(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_device(v) for v in value)
    if isinstance(value, list):
        return [_device(v) for v in value]
    return value


class Syncs:
    """Whether implicit device -> host synchronisations are refused (the default) or allowed and recorded, as CuPy
    would make them silently; and how many explicit transfers down (`.get()`) were made."""
    allowed = False
    seen = []  # what each allowed implicit synchronisation was, in order
    gets = 0


def _refuse(what, convert):
    def refused(self, *args, **kwargs):
        if not Syncs.allowed:
            raise TypeError(SYNC % what)
        Syncs.seen.append(what)
        return convert(self._data, *args, **kwargs)
    return refused


class StrictArray(np.lib.mixins.NDArrayOperatorsMixin):
    __slots__ = ("_data",)

    def __init__(self, data):
        self._data = data

    # --- the only ways down ---------------------------------------------------------------------------------------
    def get(self):
        Syncs.gets += 1
        return np.array(self._data, copy=True)

    # --- refused: implicit conversions and synchronisations --------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(IMPLICIT)

    __float__ = _refuse("float()", float)
    __int__ = _refuse("int()", int)
    __index__ = _refuse("operator.index()", lambda a: a.__index__())
    __bool__ = _refuse("bool()", bool)
    __complex__ = _refuse("complex()", complex)
    item = _refuse(".item()", np.ndarray.item)
    tolist = _refuse(".tolist()", np.ndarray.tolist)
    tobytes = _refuse(".tobytes()", np.ndarray.tobytes)

    # --- numpy protocols: device in, device out ------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        where = "numpy.%s" % ufunc.__name__
        out = kwargs.get("out")
        raw_inputs = _raw(inputs, where)
        raw_kwargs = _raw(kwargs, where)
        result = getattr(ufunc, method)(*raw_inputs, **raw_kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _device(result)

    def __array_function__(self, func, types_, args, kwargs):
        where = "numpy.%s" % func.__name__
        return _device(func(*_raw(args, where), **_raw(kwargs, where)))

    # --- array behaviour ---------------------------------------------------------------------------------------
    def __getitem__(self, index):
        return _device(self._data[_lenient_raw(index)])

    def __setitem__(self, index, value):
        self._data[_lenient_raw(index)] = _lenient_raw(value)

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        return (_device(row) for row in self._data)

    def __repr__(self):
        return "StrictArray(%r)" % (self._data,)

    def __copy__(self):
        return StrictArray(self._data.copy())

    def __deepcopy__(self, memo):
        return StrictArray(self._data.copy())

    def __getattr__(self, name):
        if name.startswith("__"):  # __array_interface__, __array_struct__, __dlpack__: host access numpy would take
            raise AttributeError(name)
        value = getattr(self._data, name)
        if callable(value):
            def method(*args, **kwargs):
                where = "ndarray.%s" % name
                return _device(value(*_raw(args, where), **_raw(kwargs, where)))
            method.__name__ = name
            return method
        return _device(value) if isinstance(value, np.ndarray) else value


class _Function:
    """A numpy function (or ufunc) taking and returning device arrays; a ufunc's methods (`at`, `reduce`, ...) too."""

    def __init__(self, fn, name):
        self._fn, self.__name__ = fn, name

    def __call__(self, *args, **kwargs):
        return _device(self._fn(*_raw(args, self.__name__), **_raw(kwargs, self.__name__)))

    def __getattr__(self, name):
        value = getattr(self._fn, name)
        return _Function(value, "%s.%s" % (self.__name__, name)) if callable(value) else value


def asarray(a, dtype=None, order=None):
    """Host data up to the device (a copy); a device array of the right dtype as it is."""
    if isinstance(a, StrictArray):
        if dtype is None or np.dtype(dtype) == a.dtype:
            return a
        return StrictArray(a._data.astype(dtype))
    return StrictArray(np.array(_lenient_raw(a), dtype=dtype, order=order or "K", copy=True))


def array(a, dtype=None, copy=True, order="K"):
    if isinstance(a, StrictArray):
        return StrictArray(np.array(a._data, dtype=dtype, copy=True, order=order))
    return StrictArray(np.array(_lenient_raw(a), dtype=dtype, copy=True, order=order))


def asnumpy(a):
    return a.get() if isinstance(a, StrictArray) else np.asarray(a)


class _Namespace(types.SimpleNamespace):
    """A module of the fake: numpy's attributes, functions wrapped on first use."""

    def __init__(self, module, name, **extra):
        super().__init__(**extra)
        self.__name__ = name
        self._module = module

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if isinstance(value, types.ModuleType):
            wrapped = _Namespace(value, "%s.%s" % (self.__name__, name))
        elif isinstance(value, type) or not callable(value):
            wrapped = value  # dtypes, classes (iinfo, dtype), constants
        else:
            wrapped = _Function(value, "%s.%s" % (self.__name__, name))
        setattr(self, name, wrapped)
        return wrapped


def module():
    """A fresh fake device array module (CuPy's rules, numpy's arithmetic)."""
    return _Namespace(np, MODULE_NAME, asarray=asarray, asanyarray=asarray, array=array, asnumpy=asnumpy,
                      ndarray=StrictArray)


def install(monkeypatch, mode="auto", allow_syncs=False):
    """Run "gpu" placements on a fresh fake module, CUDA reported usable, under ONEFLOW_COMPAT_DEVICE=`mode`, in a
    new default session; returns the module. `allow_syncs`: record device -> host synchronisations in
    `Syncs.seen` instead of refusing them."""
    import oneflow_compat as flow
    from oneflow_compat.backend import devices

    fake = module()
    monkeypatch.setattr(Syncs, "allowed", allow_syncs)
    monkeypatch.setattr(Syncs, "seen", [])
    monkeypatch.setattr(Syncs, "gets", 0)
    monkeypatch.setattr(devices, "mode", lambda: mode)  # not the variable: child processes have no fake device
    monkeypatch.setattr(devices, "_CUDA", True)
    monkeypatch.setattr(devices, "_CUDA_REASON", None)
    monkeypatch.setattr(devices, "array_module", lambda tag: fake if tag == "gpu" else np)
    flow.clear_default_session()
    return fake


# --- as a pytest plugin -----------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def strict_gpu_everywhere(fresh_session, monkeypatch):
    """With `-p strict_device`: every test on the fake device, every placement a "gpu" one."""
    install(monkeypatch, "gpu", allow_syncs=os.environ.get("STRICT_DEVICE_SYNCS") == "allow")
