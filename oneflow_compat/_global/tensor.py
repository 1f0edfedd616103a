"""`flow.Tensor`: a local tensor (this rank's value) or a global tensor (a logical value on a placement, laid out
by an SBP, of which this rank holds its piece).

A tensor wraps a `runtime.global_eager.Value` (`_value`: meta, compiler placement and SBP, this rank's pieces).
Local tensors are values on this rank's one device, so both kinds run through the same eager ops
(`_global/dispatch.py`). Arithmetic operators and methods such as `.sum()` / `.reshape()` are installed from the
functional ops (`_global/tensor_methods.py`).

For code building on this class (modules, optimizers): `Tensor._make(value, ...)` wraps a Value without copying;
`t._value.pieces` are this rank's arrays (in-place updates of them are in-place updates of the tensor);
`t._set_value(v)` replaces the value in place (same object, e.g. after `to_global` of a Parameter's data).
"""
import numpy as np

from oneflow_compat.framework import client_mode
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.runtime import autograd, context, global_eager
from oneflow_compat.runtime.graph_trace import LAZY_VALUE_MESSAGE, LazyValue
from oneflow_compat import sbp as flow_sbp
from oneflow_compat._global import device_keys, global_mode, printing
from oneflow_compat._global import grad_zeroing as _grad_zeroing
from oneflow_compat._global.placement import placement as Placement
from oneflow_compat._global.size import Size

_DEFAULT_FLOAT = dtypes.float32


# OneFlow's `flow.bool` (comparisons give it; DataType kBool = 12: ir/dtypes.py); the legacy API has no boolean dtype
BOOL = dtypes.bool_
global_eager.register_dtype(BOOL)


def dtype_of_numpy(np_dtype):
    np_dtype = np.dtype(np_dtype)
    if np_dtype == np.bool_:
        return BOOL
    return dtypes.from_numpy(np_dtype)


def as_dtype(d):
    if d is None or isinstance(d, dtypes.DType):
        return d
    if d is bool:
        return BOOL
    if d is float:
        return dtypes.float32
    if d is int:
        return dtypes.int64
    return dtype_of_numpy(d)


def device_tag(device_type):
    """The compiler's device tag running a local tensor of `device_type` ("cuda" runs where "gpu" runs)."""
    from oneflow_compat.backend import devices

    return devices.resolve_tag("gpu", spelled="cuda") if device_type == "cuda" else "cpu"


parse_device = device_keys.parse_type  # 'cpu' / 'cuda' / 'cuda:0' / flow.device -> device type


class device:  # noqa: N801 - OneFlow's name
    """`flow.device("cuda:0")`: a local tensor's device."""

    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index
        if not isinstance(type, str):
            raise TypeError("device must be a string like 'cpu' or 'cuda:0', got %r" % (type,))
        if ":" in type:  # (ParsingDeviceTag's words and "-1: no index", device_keys.parse_index)
            type, index = type.split(":", 1)[0], device_keys.parse_index(type)
        elif index is not None and int(index) < 0:
            raise ValueError("Device ID should be non-negative")  # Device::New's InvalidValueError
        self.type = parse_device(type)
        # no index: the process's own device, index LOCAL_RANK (Device::ParseAndNew / Device::New(type) @ v0.9.0)
        self.index = _local_rank() if index is None else int(index)

    def __repr__(self):
        return "device(type='%s', index=%d)" % (self.type, self.index)

    def __str__(self):
        return "%s:%d" % (self.type, self.index)

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))


def _world_size():
    return global_eager.world_size()


DeviceStringError = device_keys.DeviceStringError


class SplitAxisError(RuntimeError, ValueError):
    """An SBP split axis a tensor does not have (RuntimeError as OneFlow 0.9; ValueError as this project raised)."""


def normalize_sbp(ir_sbp, ndim, what):
    if S.is_nd(ir_sbp):
        return S.nd([normalize_sbp(s, ndim, what) for s in ir_sbp.sbps], ir_sbp.mesh)
    if S.is_split(ir_sbp):
        axis = ir_sbp.axis
        if not -ndim <= axis < max(ndim, 1) or ndim == 0:
            # OneFlow 0.9's words (core/functional/impl/global_cast.cpp CheckNdSbpValid), a RuntimeError there
            raise SplitAxisError("%s: Split axis out of range (expected to be in range of [0, %d), but got %d!) "
                                 "(split(dim=%d) of a tensor with %d dimension(s))" % (what, ndim, axis, axis, ndim))
        return S.S(axis % ndim)
    return ir_sbp


def check_placement(p, what):
    if not isinstance(p, Placement):
        raise TypeError("%s: placement must be a flow.placement, got %r" % (what, p))
    p.check_valid(_world_size(), what)
    return p


class Tensor:
    """A local or global tensor (see the module docstring)."""

    __array_priority__ = 1000  # `ndarray + tensor` defers to the tensor

    # every instance sets these (`_make`, `_adopt`); the class values are the defaults of a fresh local leaf
    _value = None
    _placement = None
    _sbp = None
    _device = "cpu"  # the device's key: "cpu" / "cuda" (index LOCAL_RANK) or "cuda:K" (`_global/device_keys.py`)
    requires_grad_flag = False
    _node = None  # the recorded op that made this tensor (None: a leaf)
    _acc_node = None  # a leaf's `accumulate_grad` node, once an op recorded it or a hook was registered
    _out_index = 0
    _grad = None
    _grad_hooks = ()  # a leaf's hooks on its gradient before accumulation (`register_hook`)
    _post_acc_hooks = ()  # a leaf's hooks after accumulation (`_register_post_grad_accumulation_hook`)
    # views of local eager tensors (`_global/views.py`): a view's root (the tensor owning the storage), its layout
    # (shape, stride, offset) in the root's storage, whether its gradient reaches the root (not for `detach()`);
    # a root's {id: weakref} of its live views
    _view_root = None
    _view_layout = None
    _view_differentiable = True
    _views = None
    # a tensor over memory it does not own in C order (an array received from another process, one the framework
    # hands in as is): its array is kept, never re-laid out (`views.settle`)
    _foreign_layout = False
    # a storage made for a strided array given to from_numpy / from_dlpack: the tensor the user sees (a view of it)
    _storage_owner = None

    # --- construction (`__init__`, `flow.Tensor(data)` / `flow.Tensor(*shape)`, is installed by
    # `_global/tensor_methods.py` together with the methods built on ops) --------------------------------------
    def _adopt(self, t):
        self._value = t._value
        self._placement = t._placement
        self._sbp = t._sbp
        self._device = t._device
        self.requires_grad_flag = t.requires_grad_flag
        self._node = t._node
        self._out_index = t._out_index
        self._grad = t._grad

    @classmethod
    def _make(cls, value, placement=None, sbp=None, device="cpu", requires_grad=False, grad_fn=None,
              out_index=0):
        """Wraps a Value. `placement` (flow.placement) makes it global; `sbp` (tuple of flow.sbp) overrides the
        SBP shown (a one-rank placement keeps the SBP the user asked for)."""
        client_mode.use(client_mode.GLOBAL, "creating a flow.Tensor")  # every tensor, op results included
        t = object.__new__(cls)
        t._value = value
        t._placement = placement
        t._sbp = sbp
        t._device = device
        t.requires_grad_flag = bool(requires_grad)
        t._node = grad_fn
        t._out_index = out_index
        t._grad = None
        return t

    def _set_value(self, value, placement=None, sbp=None):
        if self._views or self._view_root is not None:  # new storage: views taken before keep the old one
            from oneflow_compat._global import views

            views.forget(self) if self._view_root is None else views._unlink(self)
        self._value = value
        if placement is not None:
            self._placement = placement
        self._sbp = sbp

    # --- metadata -------------------------------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._value.meta.shape)

    def size(self, dim=None):
        if dim is None:
            return self.shape
        return self._value.meta.shape[dim]

    @property
    def dtype(self):
        return self._value.meta.dtype

    @property
    def ndim(self):
        return len(self._value.meta.shape)

    def dim(self):
        return self.ndim

    def nelement(self):
        return self.numel()

    def numel(self):
        n = 1
        for d in self._value.meta.shape:
            n *= d
        return n

    def __len__(self):
        if not self._value.meta.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._value.meta.shape[0]

    @property
    def is_global(self):
        return self._placement is not None

    @property
    def is_consistent(self):
        return self.is_global

    @property
    def is_local(self):
        return self._placement is None

    @property
    def is_lazy(self):
        """Whether this tensor lives inside an nn.Graph's build() (it has no value there)."""
        return isinstance(self._value, LazyValue)

    @property
    def placement(self):
        if self._placement is None:
            raise RuntimeError("Only global tensors have placement; this tensor is local (its device is %s)"
                               % self.device)
        return self._placement

    @property
    def sbp(self):
        if self._placement is None:
            raise RuntimeError("Only global tensors have sbp; this tensor is local")
        if self._sbp is not None:
            return self._sbp
        shown = flow_sbp.symbols_of(self._value.sbp)
        hierarchy = tuple(self._placement.hierarchy)
        if len(shown) != len(hierarchy):  # (the compiler drops a placement's size-1 dims: a broadcast there, so
            it = iter(shown)               # the symbol shown is one per placement dimension, as OneFlow's)
            kept = [n for n in hierarchy if n != 1]
            if len(kept) == len(shown):
                shown = tuple(next(it) if n != 1 else flow_sbp.broadcast for n in hierarchy)
            else:
                shown = tuple(shown) + (flow_sbp.broadcast,) * (len(hierarchy) - len(shown))
        return shown

    @property
    def device(self):
        if self._placement is not None:
            if global_mode.enabled():  # (OneFlow 0.9: the placement's device type, in a global mode scope)
                return device(self._placement.type)
            raise RuntimeError("Only local tensors have 'device'; this global tensor has placement %r"
                               % self._placement)
        return device(self._device)

    @property
    def is_cuda(self):
        if self._placement is not None:
            return self._placement.type == "cuda"
        return device_keys.type_of(self._device) == "cuda"

    @property
    def grad_fn(self):
        """The node of the op that made this tensor; for a leaf that requires a gradient, its `accumulate_grad`
        node once an op recorded it (as OneFlow 0.9), else None."""
        if self._node is not None:
            return self._node
        return self._acc_node if self.requires_grad_flag else None

    @grad_fn.setter
    def grad_fn(self, node):
        self._node = node

    @property
    def is_leaf(self):
        return self._node is None

    @property
    def requires_grad(self):
        return self.requires_grad_flag

    @requires_grad.setter
    def requires_grad(self, flag):
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
        if not self.is_leaf and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if requires_grad and not self.dtype.is_floating:
            raise RuntimeError("only Tensors of floating point can require gradients (this one is %s)"
                               % self.dtype.name)
        self.requires_grad_flag = bool(requires_grad)
        if not requires_grad:
            self._acc_node = None
        return self

    @property
    def grad(self):
        if _CTX.graph_traces:  # inside nn.Graph.build: the job's gradient blob after loss.backward() (lazy.py)
            return LAZY_GRADS["grad_of"](self)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None and not isinstance(value, Tensor):
            raise TypeError("assigned grad must be a Tensor or None, got %s" % type(value).__name__)
        self._grad = value

    @property
    def data(self):
        return self.detach()

    @data.setter
    def data(self, other):
        self._set_value(other._value, other._placement, other._sbp)
        self._placement = other._placement
        self._device = other._device

    def _edge(self):
        """Where a recorded op's gradient for this input goes (a leaf gets its `accumulate_grad` node here)."""
        if not self.requires_grad_flag:
            return None
        if self._node is not None:
            return ("node", self._node, self._out_index)
        self._leaf_node()
        return ("leaf", self)

    def _leaf_node(self):
        if self._acc_node is None:
            self._acc_node = autograd.AccumulateGrad()
        return self._acc_node

    # --- values ---------------------------------------------------------------------------------------------
    def numpy(self):
        """Local: the array (shared with the tensor on CPU). Global: the whole logical value on every rank (a
        collective: every rank of the world must call it)."""
        if isinstance(self._value, LazyValue):
            raise RuntimeError(LAZY_VALUE_MESSAGE % "numpy()")
        if self._placement is None:
            if self._view_root is None and not self._foreign_layout:
                from oneflow_compat._global import views

                views.settle(self)  # (the array over the tensor's memory with its strides, as 0.9's)
            return _host(self._value.pieces[0])
        return global_eager.full_value(self._value)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a.astype(dtype) if dtype is not None else a

    def item(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars (shape %s)"
                             % (tuple(self.shape),))
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_floating:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __format__(self, spec):
        # OneFlow 0.9 (`framework/tensor.py: _format`): a 0-d tensor formats as its Python number (so
        # f"{loss}" shows the full float), any other tensor as an object (an empty spec gives str(tensor))
        if self.ndim == 0:
            return format(self.numpy().tolist(), spec)
        return object.__format__(self, spec)

    def __repr__(self):
        if isinstance(self._value, LazyValue):
            return _lazy_repr(self)
        return printing.tensor_repr(self)

    __str__ = __repr__

    __hash__ = object.__hash__

    # --- layouts --------------------------------------------------------------------------------------------
    def to_local(self, copy=False):
        """This rank's piece (no communication; `copy`: a copy of it, OneFlow 0.9's keyword); ranks outside the
        placement get an empty tensor with the logical number of dimensions."""
        if isinstance(self._value, LazyValue):
            raise RuntimeError("global_tensor.to_local() is not supported within nn.Graph for now")
        if self._placement is None:
            raise RuntimeError("Expected global tensor for to_local but got local tensor!")
        v = self._value
        if v.pieces and not copy and not self._foreign_layout and getattr(v.pieces[0], "flags", None) is not None \
                and not v.pieces[0].flags.c_contiguous:
            # a kernel's strided result: put in C order (OneFlow's layout) here, in the global tensor too, so
            # that the local tensor, which shares it, is laid out as 0.9's and stays shared (`views.settle`); a
            # global made of a local view (`_foreign_layout`, 0.9's LocalToGlobal shares it) keeps that memory
            v.pieces[0] = global_eager.xp(v.placement).ascontiguousarray(v.pieces[0])
        if v.pieces:
            piece = v.pieces[0].copy() if copy else v.pieces[0]
        else:
            piece = global_eager.xp(v.placement).zeros((0,) * max(1, len(v.meta.shape)), dtype=v.meta.dtype.np)
        local = global_eager.Value(TensorMeta(piece.shape, v.meta.dtype), global_eager.local_placement(
            v.placement.device_tag), S.B, [piece])
        out = Tensor._make(local, device=self._placement.type)  # (the process's device: index LOCAL_RANK)
        if self._foreign_layout:
            out._foreign_layout = True
        src = v
        if autograd.is_grad_enabled() and self.requires_grad_flag:
            def to_local_backward(dys):
                dy = dys[0]
                return [global_eager.Value(src.meta, src.placement, src.sbp, dy.pieces if src.pieces else [])]

            node = autograd.FunctionNode("global_to_local_backward", [self._edge()], to_local_backward)
            # create_graph=True (higher_order.py): the local gradient made global again without communication,
            # recorded (layouts.to_global of a local tensor with check_meta=False)
            placement, sbp = self.placement, self.sbp
            node.backward_tensors = lambda dys: [dys[0].to_global(placement=placement, sbp=sbp, check_meta=False)]
            out.requires_grad_flag, out.grad_fn = True, node
        return out

    # --- autograd -------------------------------------------------------------------------------------------
    def detach(self):
        """A tensor without history; on the same storage (a view without autograd, for a local eager tensor)."""
        v = self._value
        if isinstance(v, LazyValue):  # inside nn.Graph.build: an op of the job that cuts its autodiff
            (out,) = v.trace.apply("stop_gradient", {}, [v], v.placement)
            return Tensor._make(out, self._placement, None, self._device)
        t = Tensor._make(v, self._placement, self._sbp, self._device)
        if self._placement is None:
            from oneflow_compat._global import views

            if views.applicable(self):
                views.register(views.root_of(self), t, views.layout_of(self), differentiable=False)
        return t

    def detach_(self):
        """Makes this tensor a leaf that does not require a gradient, in place."""
        self._node, self._acc_node, self.requires_grad_flag = None, None, False
        return self

    @property
    def retains_grad(self):
        return getattr(self, "_retaining", False) and (self._node is not None or isinstance(self._value, LazyValue))

    def retain_grad(self):
        """Keeps this non-leaf tensor's gradient in `.grad` after `backward()` (a leaf keeps it anyway)."""
        if isinstance(self._value, LazyValue):  # inside nn.Graph.build (lazy.py)
            return LAZY_GRADS["retain_grad"](self)
        if not self.requires_grad_flag:
            raise RuntimeError("Can't retain_grad on Tensor that has requires_grad=False")
        if self._node is None or getattr(self, "_retaining", False):
            return
        self._retaining = True
        me = self

        def keep(value):  # after the tensor's hooks (terminal), then its post-accumulation hooks as 0.9's
            me._accumulate_grad(value, run_hooks="post")  # CopyOrAccGrad runs them (autograd_engine.cpp:83-103)

        self._node.add_output_hook(self._out_index, keep, terminal=True)

    def register_hook(self, hook):
        """`hook(grad)` runs when this tensor's gradient is computed; a tensor it returns replaces the gradient
        (for a leaf, before it is accumulated into `.grad`). Returns None, as OneFlow 0.9's (tensor.cpp:
        PyTensorObject_register_hook; there is no handle to remove a hook).

        As OneFlow v0.9.0 (core/autograd/autograd_meta.cpp:77-84 `current_grad_value`, tensor_arg.cpp:28-43): a
        hook sees the gradient SUMMED over every path that reaches the tensor, once per backward pass, hooks in
        the order registered, each given the previous one's result; what the last returns is what flows on
        (a non-leaf: into its op's backward and into `.grad` under `retain_grad`, whichever was called first;
        a leaf: into `.grad`, and `autograd.grad`'s result for an input). (0.9's engine reads
        `current_grad_value()` twice for a leaf, in its accumulate node's `Apply` and in `CopyOrAccGrad`, so its
        hooks run twice there, the first result unused: that repetition is not reproduced.)"""
        if not self.requires_grad_flag:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        me = self
        if self._node is None:
            self._leaf_node()
            self._grad_hooks = tuple(self._grad_hooks) + (hook,)
            return None

        def run(value):
            changed = hook(me._grad_like(value))
            return None if changed is None else changed._value

        self._node.add_output_hook(self._out_index, run)
        return None

    def _register_post_grad_accumulation_hook(self, hook):
        """`hook(grad)` runs on `.grad` after each accumulation into it, a tensor it returns becoming `.grad`
        (OneFlow's DDP uses it): a leaf's at every backward pass, a non-leaf's where it retains its gradient
        (OneFlow v0.9.0 api/python/utils/tensor_utils.cpp:112-117 takes either; autograd_engine.cpp:83-103
        `CopyOrAccGrad` runs them for leaves and retained non-leaves alike)."""
        if self._node is None:
            self._leaf_node()
        self._post_acc_hooks = tuple(self._post_acc_hooks) + (hook,)

    def _hooked_grad(self, value):
        """A leaf's gradient Value through its `register_hook` hooks (autograd.grad's result for an input)."""
        for hook in self._grad_hooks:
            changed = hook(self._grad_like(value))
            if changed is not None:
                value = changed._value
        return value

    def _grad_like(self, value):
        return Tensor._make(value, self._placement, self._sbp, self._device)

    def _accumulate_grad(self, value, run_hooks=True):
        """Adds a gradient (any layout) into `.grad`, boxed to this tensor's own placement and SBP; a leaf's
        hooks run before (`register_hook`) and after (post-accumulation hooks). (A tensor on "cuda:K", another GPU
        than the process's own: with that GPU current, where `.grad` lives.)"""
        if len(self._device) > 4:
            with device_keys.current(self._device):
                return self._accumulate_in_place(value, run_hooks)
        return self._accumulate_in_place(value, run_hooks)

    def _accumulate_in_place(self, value, run_hooks):
        own = self._value
        folded = None
        if self._grad is not None and self._placement is not None and not getattr(value, "folded", False) and \
                not (run_hooks and self._grad_hooks):
            # a partial-sum `.grad` (after zero_grad) and a gradient no bucket summed: added first, then boxed once
            # (a leaf's hooks see the new gradient alone: then the old one is boxed on its own, `_add_to_grad`)
            folded = _grad_zeroing.fold_into_old(self, value)
            if folded is not None:
                value = folded
        value = autograd.box(value, own.placement, own.sbp, label="gradient")  # explain: a gradient boxing
        if folded is not None:
            value.folded = True
        if run_hooks is True:  # (run_hooks="post": a retained non-leaf's, its hooks ran on its node's output)
            for hook in self._grad_hooks:
                changed = hook(self._grad_like(value))
                if changed is not None:
                    value = autograd.box(changed._value, own.placement, own.sbp, label="gradient")
        self._add_to_grad(value)
        if run_hooks:
            for hook in self._post_acc_hooks:
                # a tensor the hook returns becomes `.grad` (OneFlow 0.9 autograd_engine.cpp AccumulateGrad)
                changed = hook(self._grad)
                if changed is not None:
                    self._grad = Tensor._make(autograd.box(changed._value, own.placement, own.sbp, label="gradient"),
                                              self._placement, self._sbp, self._device)

    def _add_to_grad(self, value):
        """`.grad` += `value` (already on this tensor's layout). The accumulated gradient of a global leaf takes
        the leaf's placement and SBP (OneFlow 0.9, oneflow/core/autograd/autograd_engine.cpp:154-175
        `AccGrad4LeafTensor` boxes it so after every accumulation): a broadcast parameter's gradient that
        `zero_grad()` left as partial-sum zeros (`_global/grad_zeroing.py`) shows broadcast again and holds the
        old plus the new sum (the bucket's sum already holds the old pieces where `value.folded`); one on another
        layout is boxed first."""
        own = self._value
        grad = self._grad
        if grad is None or grad._value.meta.shape != own.meta.shape:
            pieces = [p.copy() for p in value.pieces]  # the gradient may share memory with other values
            self._grad = Tensor._make(global_eager.Value(own.meta, own.placement, own.sbp, pieces),
                                      self._placement, self._sbp, self._device)
            return
        g = grad._value
        if g.placement != own.placement or g.sbp != own.sbp:
            if getattr(value, "folded", False) and _grad_zeroing.is_partial_of(g, own) and \
                    len(g.pieces) == len(value.pieces) and all(p.shape == q.shape for p, q in zip(g.pieces,
                                                                                               value.pieces)):
                # a sum that already holds this partial-sum gradient (its pieces were added into the bucket before
                # the all-reduce: `grad_zeroing.leaf_gradient`): it is the new `.grad`. Every rank takes this branch
                # alike (`folded` is decided from layouts and hooks only). A leaf's own bucket slot becomes `.grad`'s
                # storage (`bucket_slot`: DDP's gradient-as-bucket-view; from the next step on the backward writes
                # into it and nothing is copied back: `buckets.OverlappedGradients`, as OneFlow 0.9's boxed sum is
                # a new tensor); another sum is written into the old gradient's storage (one copy, as the `+=` below).
                # No collective, no allocation.
                pieces = g.pieces
                if getattr(value, "bucket_slot", False):
                    pieces = value.pieces
                else:
                    for p, q in zip(pieces, value.pieces):
                        p[...] = q
                # (a global tensor has no views to tell: `_set_value`'s work is not needed)
                grad._value = global_eager.Value(own.meta, own.placement, own.sbp, pieces, own.lk)
                grad._sbp = self._sbp
                return
            g = autograd.box(g, own.placement, own.sbp)
            g = global_eager.Value(g.meta, g.placement, g.sbp, [p.copy() for p in g.pieces])
            grad._set_value(g, self._placement, self._sbp)
        elif self._placement is not None:
            _grad_zeroing.forget_zeroed(g)
            grad._sbp = self._sbp  # (one device: its value was already laid out so; the SBP shown is the leaf's)
        for p, q in zip(g.pieces, value.pieces):
            p += q

    # --- in-place helpers -----------------------------------------------------------------------------------
    def zero_(self):
        with device_keys.current(self._device if self._placement is None else "cpu"):  # (a "cuda:K" tensor's GPU)
            for p in self._value.pieces:
                p[...] = 0
        return self

    def fill_(self, value):  # (while gradients are recorded: `_global/inplace_fill.py`, installed over this)
        if self.dtype is dtypes.bfloat16 and isinstance(value, (int, float, np.number)):
            from oneflow_compat.kernels import bfloat16 as bf16_k

            value = bf16_k.round_to_bfloat16(np, np.float32(value))[0]
        with device_keys.current(self._device if self._placement is None else "cpu"):
            for p in self._value.pieces:
                p[...] = value
        _grad_zeroing.forget_zeroed(self._value)
        return self

    def _check_inplace(self):
        if autograd.is_grad_enabled() and self.requires_grad_flag and self.is_leaf:
            raise RuntimeError("a leaf Tensor that requires grad is being used in an in-place operation")  # OneFlow 0.9


_CTX = context.CURRENT  # `_CTX.graph_traces`: the nn.Graph builds being traced (_global/lazy.py)
# `t.grad` / `t.retain_grad()` inside nn.Graph.build: set by _global/lazy.py (which imports this module), the one
# place that makes builds traced
LAZY_GRADS = {}
_GLOBAL_API = client_mode.GLOBAL
_API_CHOICE = client_mode.choice_holder()


def wrap(value, placement, device):
    """A new Tensor holding an op's output `value` (what `Tensor._make(value, placement, None, device)` makes),
    written for speed: only what differs from the class defaults is set."""
    if _API_CHOICE.api[0] is not _GLOBAL_API:
        client_mode.use(client_mode.GLOBAL, "creating a flow.Tensor")
    t = object.__new__(Tensor)
    t._value = value
    if placement is not None:
        t._placement = placement
    if device != "cpu":
        t._device = device
    return t


def _lazy_repr(t):
    """A tensor inside nn.Graph.build(): its description, no values (OneFlow shows `is_lazy='True'`)."""
    parts = []
    if t.is_global:
        parts.append("placement=%r" % (t._placement,))
        parts.append("sbp=(%s)" % "".join("%r," % s for s in t.sbp))
    parts.append("is_lazy='True'")
    parts.append("size=%s" % (tuple(t.shape),))
    parts.append("dtype=oneflow.%s" % t.dtype.name)
    return "tensor(..., %s)" % ", ".join(parts)


def _host(x):
    from oneflow_compat.backend import devices

    return devices.to_host(x)


def _local_rank():
    return device_keys.local_rank()


def is_tensor(x):
    return isinstance(x, Tensor)
