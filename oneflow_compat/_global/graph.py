"""`flow.nn.Graph` (OneFlow 0.5–0.9): a model's training or evaluation step traced once into the legacy compiler's
`Job`, compiled through the same passes, and run as a plan on every later call (`flow.nn.graph` is this module).

    class PipelineGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.module_pipeline = module_pipeline          # wrapped into a Block
            self.module_pipeline.m_stage0.config.stage_id = 0
            self.config.set_gradient_accumulation_steps(2)
            self.add_optimizer(sgd)

        def build(self, x, y):
            loss = self.loss_fn(self.module_pipeline(x), y)
            loss.backward()                                 # marks the loss
            return loss

The first call traces `build` with lazy tensors (`lazy.py`: every op adds an op to the job; the module's
parameters become the job's variables named by attribute path and bound to the parameters' own storage), then
compiles and runs (`runtime/graph_runtime.py`); later calls only run. Inputs and outputs are global tensors (each
rank feeds its own pieces; outputs keep theirs, empty on ranks outside their placement) or, in a local graph,
local tensors.

After `loss.backward()`, build may read gradients as lazy tensors (OneFlow 0.9): `x.grad` of a tensor it called
`x.retain_grad()` on (a graph input requires grad when the eager tensor passed in does) and `p.grad` of a
parameter are the job's gradient blobs, returned as outputs or used by further ops; a parameter's `.grad` changed
in place there (`clip_grad_norm_`) is what its update reads (`lazy.py` `grad_of`, `passes/autodiff.py`).

Modules assigned to the graph are wrapped in a `Block` (`graph_block.py`) carrying the graph's configuration of
the module, the pipeline stage in its three spellings; a placed stage moves the module's tensor inputs onto its
placement (SBP kept).

Under MPI every call of a global graph starts with the ranks checking that they are in the same call of the same
graph, after the same global ops (`runtime/agreement.py`; rejected calls count), and calls from several threads
take turns in one order on every rank.
"""
import collections
import time
import warnings

import numpy as np

from oneflow_compat.ir import dtypes as _dtypes
from oneflow_compat.ir.placement import Placement as IrPlacement
from oneflow_compat.runtime import activity, agreement, buckets, context, global_eager
from oneflow_compat.runtime.graph_runtime import CompiledGraph, GraphInputError
from oneflow_compat.runtime.graph_trace import GraphTrace, layout_of
from oneflow_compat._global import device_keys, generators, graph_debug, lazy
from oneflow_compat._global.graph_block import Block, BlockConfig, GraphModule, indent, tensor_text
from oneflow_compat._global import graph_optim
from oneflow_compat._global.graph_optim import GraphOptimizers, check_optimized_parameters
from oneflow_compat._global.modules import Module
from oneflow_compat._global.placement import placement as Placement
from oneflow_compat._global.tensor import Tensor

__all__ = ["Graph", "GraphConfig", "GraphModule", "Block", "BlockConfig"]

# the train step counter's name in a graph's state dict (OneFlow 0.9's AutoTrainStep pass; the legacy jobs' counter,
# one per job of a session, is this name followed by the job's)
_TRAIN_STEP = "System-Train-TrainStep"


# --- the graph's configuration -------------------------------------------------------------------------------
class GraphConfig:
    """`graph.config`: gradient accumulation (OneFlow's meaning: a call is a mini-batch cut into micro-batches),
    and the optimisation switches OneFlow offers that do not change numbers (accepted, recorded)."""

    def __init__(self):
        self._training = False
        self._accumulation_steps = 1
        self._amp = False
        self._amp_dtype = _dtypes.float16
        self._switches = {}

    @property
    def training(self):
        return self._training

    def _train(self, mode=True):
        self._training = bool(mode)

    def set_gradient_accumulation_steps(self, value):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError("set_gradient_accumulation_steps: value must be an int >= 1, got %r" % (value,))
        self._accumulation_steps = value

    @property
    def gradient_accumulation_steps(self):
        return self._accumulation_steps

    def enable_amp(self, mode=True, *, dtype=None):
        """Automatic mixed precision (OneFlow 0.9's arguments and checks): the graph's ops on CUDA placements
        compute in `dtype` (float16 by default, or bfloat16) where OneFlow's AutoMixedPrecision pass says —
        white-list ops and the gray/clear ops between them — with casts at the boundaries; parameters, their
        gradients and the optimizer stay float32 (`passes/amp.py`). A graph on the CPU computes as without it, as
        OneFlow's pass leaves CPU ops alone."""
        dtype = _dtypes.float16 if dtype is None else dtype
        assert type(mode) is bool
        assert dtype in (_dtypes.float16, _dtypes.bfloat16)
        self._amp = mode
        self._amp_dtype = dtype

    def enable_zero(self, mode=True, *, stage=2, shard_min_size=1024, shard_restore_level=1):
        """ZeRO (OneFlow 0.9's arguments and checks): at every stage a data-parallel (broadcast) parameter, its
        optimizer states and its update are split S(0) over its ranks, its gradient reduce-scattered and the
        parameter gathered for the forward pass as `shard_restore_level` says; stage 2 adds OneFlow's NCCL
        compute-stream flag (no CPU meaning, recorded) and stage 3 stops sharing one boxing between consumers;
        `passes/zero.py` says how. The numbers do not change."""
        if not mode:
            self._switches.pop("enable_zero", None)
            return
        assert 1 <= stage <= 3, "ZeRO stage must range from 1 to 3."
        assert shard_min_size > 0, "ZeRO min size of a sharded optimizer state must > 0."
        if shard_restore_level not in (0, 1, 2):
            raise ValueError("enable_zero: shard_restore_level must be 0 (no restore), 1 (soft) or 2 (hard), got %r"
                             % (shard_restore_level,))
        self._switches["enable_zero"] = {"stage": stage, "shard_min_size": shard_min_size,
                                         "shard_restore_level": shard_restore_level}

    def _switch(name):  # noqa: N805 - builds methods
        def set_switch(self, mode=True, *args, **kwargs):
            self._switches[name] = mode

        set_switch.__name__ = name
        set_switch.__doc__ = "Accepted and recorded: an optimisation that does not change the numbers."
        return set_switch

    allow_fuse_model_update_ops = _switch("allow_fuse_model_update_ops")
    allow_fuse_add_to_output = _switch("allow_fuse_add_to_output")
    allow_fuse_cast_scale = _switch("allow_fuse_cast_scale")
    enable_cudnn_conv_heuristic_search_algo = _switch("enable_cudnn_conv_heuristic_search_algo")
    enable_fuse_model_update_ops = _switch("enable_fuse_model_update_ops")
    enable_fuse_add_to_output = _switch("enable_fuse_add_to_output")
    enable_fuse_cast_scale = _switch("enable_fuse_cast_scale")
    enable_straighten_algorithm = _switch("enable_straighten_algorithm")
    enable_compress_memory = _switch("enable_compress_memory")
    set_outputs_buffer_size = _switch("set_outputs_buffer_size")
    # OneFlow 0.9's MultiTensorUpdate pass merges small update kernels into one launch; fused_model_update_cast
    # (AMP) also writes the half copy of each weight in the update kernel (graph_config.py:393-403@v0.9.0): the
    # same numbers as separate updates and casts, which is what runs here
    enable_multi_tensor_update = _switch("enable_multi_tensor_update")
    enable_fused_model_update_cast = _switch("enable_fused_model_update_cast")
    del _switch

    def __repr__(self):
        items = ["training=%s" % self._training]
        if self._accumulation_steps != 1:
            items.append("gradient_accumulation_steps=%d" % self._accumulation_steps)
        if self._amp:
            items.append("amp=True")
        auto = self.__dict__.get("_auto_parallel")
        if auto is not None and auto.enable:
            items.append("auto_parallel=True")
        return "(CONFIG:config:GraphConfig(%s))" % "".join(item + ", " for item in items)  # OneFlow's ", " after each


# --- the graph -------------------------------------------------------------------------------------------------
class Graph:
    """Base class of a compiled training or evaluation step (see the module docstring)."""

    def __init__(self):
        cls = type(self).__name__
        d = self.__dict__
        made = context.get().graph_instances  # per process (a simulated rank: its own, as a real rank counts)
        d["_name"] = "%s_%d" % (cls, made[cls])
        made[cls] += 1
        d["config"] = GraphConfig()
        d["_blocks"] = collections.OrderedDict()
        d["_opts"] = []  # [(optimizer, lr scheduler or None)]
        d["_compiled"] = None
        d["_calls"] = 0  # calls so far, rejected ones included
        d["_graph_optimizers"] = None
        d["_args_repr"] = []
        d["_outs_repr"] = []
        d["_out_struct"] = None
        d["_in_struct"] = None
        d["_in_constants"] = []
        d["_debug"] = -1
        d["_debug_ranks"] = [0]
        d["_debug_options"] = graph_debug.DebugOptions()
        d["_op_records"] = None  # the ops build created, for the OPERATOR lines (graph_debug.py)
        d["_to_load"] = collections.OrderedDict()  # graph states loaded before the first call

    def build(self, *args, **kwargs):
        raise NotImplementedError("nn.Graph subclass %s must override build()" % type(self).__name__)

    # --- attributes ------------------------------------------------------------------------------------------
    def __setattr__(self, name, value):
        if "_blocks" not in self.__dict__:
            raise AttributeError("cannot assign %s before nn.Graph.__init__() call (call super().__init__() "
                                 "first)" % name)
        if isinstance(value, Module):
            if self.__dict__["_compiled"] is not None:
                raise RuntimeError("nn.Graph '%s' is compiled: modules cannot be added any more" % self._name)
            self._blocks[name] = Block(name, value, self)
            self.__dict__.pop(name, None)
            return
        if isinstance(value, Block):
            self._blocks[name] = value
            return
        # OneFlow 0.9's refusals and words (nn/graph/graph.py Graph.__setattr__ @ v0.9.0): a graph holds tensors
        # through its modules (a tensor of its own would be a free eager tensor of the job: not trainable), and
        # optimizers through add_optimizer
        if isinstance(value, Tensor):
            raise AttributeError("'%s' nn.Graph is not allowed to set Tensor attribute named '%s'. Please use "
                                 "nn.Module to hold the tensor, then add the nn.Module to nn.Graph."
                                 % (type(self).__name__, name))
        from oneflow_compat.optim.optimizer import Optimizer

        if isinstance(value, Optimizer):
            raise AttributeError("'%s' nn.Graph is not allowed to set Optimizer attribute named '%s'. Please use "
                                 "add_optimizer(...) instead." % (type(self).__name__, name))
        self._blocks.pop(name, None)
        object.__setattr__(self, name, value)

    def __getattr__(self, name):
        blocks = self.__dict__.get("_blocks")
        if blocks is not None and name in blocks:
            return blocks[name]
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    @property
    def name(self):
        return self._name

    @property
    def training(self):
        return self.config.training

    @property
    def is_compiled(self):
        return self._compiled is not None

    # --- training -------------------------------------------------------------------------------------------
    def add_optimizer(self, optim, *, lr_sch=None, is_sparse=False):
        """Adds a `flow.optim` optimizer (and a learning-rate scheduler over it): the graph then trains, and every
        call runs backward, the update, zero_grad and the scheduler's step inside the compiled step."""
        from oneflow_compat.optim.optimizer import Optimizer

        assert optim is not None, "optimizer cannot be None"
        assert isinstance(optim, Optimizer), "optimizer must be an instance of Optimizer"
        if is_sparse and not graph_optim.supports_sparse(optim):
            # OneFlow 0.9 (Optimizer._generate_indexed_slices_optimizer_conf): SGD, Adam and AdamW say support_sparse
            raise ValueError(f"{optim.__class__} does not support sparse updating.")
        if lr_sch is not None:
            assert getattr(lr_sch, "optimizer", None) is optim, \
                "lr_scheduler's optimizer must be the same optimizer in add_optimizer."
        if self._compiled is not None:
            raise RuntimeError("nn.Graph '%s' is compiled: add optimizers before its first call" % self._name)
        self._opts.append(graph_optim.Added(optim, lr_sch, is_sparse))
        self.config._train(True)

    def set_grad_scaler(self, grad_scaler=None):
        """The loss scaler of the train step (`flow.amp.GradScaler` or `StaticGradScaler`); before the first
        call."""
        if self._compiled is not None:
            raise RuntimeError("nn.Graph '%s' is compiled: set its grad scaler before its first call" % self._name)
        if grad_scaler is not None and not hasattr(grad_scaler, "_policy"):
            raise TypeError("set_grad_scaler: expected a flow.amp.GradScaler or StaticGradScaler, got %s"
                            % type(grad_scaler).__name__)
        self.__dict__["_grad_scaler"] = grad_scaler

    # --- calling ---------------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        flat, struct = _flatten((args, kwargs))
        tensors = [x for x in flat if isinstance(x, Tensor)]
        for t in tensors:
            if t.is_lazy:
                raise RuntimeError("nn.Graph '%s' was called with a lazy tensor: graphs cannot be nested"
                                   % self._name)
        # A call is one turn of the process-wide lock: the compiled plan has one register file, and under MPI the
        # calls of several threads must reach every rank in the same order (agreement.py)
        return agreement.in_turn(self._call, flat, struct, tensors)

    def _call(self, flat, struct, tensors):
        _make_contiguous(tensors)
        number = self._calls + 1
        values = [t._value for t in tensors]
        if self._compiled is not None:
            try:
                self._check_arguments(flat, struct, tensors, values)
            except Exception:
                # a rejected call counts, so that a rank that catches the error and calls again is caught by the
                # identity check of its next call instead of pairing it with this call on the other ranks
                self.__dict__["_calls"] = number
                raise
        text = "nn.Graph '%s' call #%d" % (self._name, number)
        pending = None
        with activity.operation(text, name_errors=False) as call:  # build's own errors keep their messages
            if self._spans_ranks(tensors):
                # after the first call, the check rides in the call's first collective where nothing before it has
                # an effect (a data-parallel step's gradient bucket: `CompiledGraph.check_rides`), and carries
                # the addends of a loss the call computed before it (`CompiledGraph.carried_output`): the loss's
                # numpy() afterwards sends nothing
                carry = self._compiled is not None and self._compiled.check_rides
                carried = self._compiled.carried_output if carry else None
                world = tuple(range(global_eager.world_size()))
                if carried is None:
                    agreement.global_op((agreement.digest(text), text), world, carry=carry)
                else:
                    check = agreement.global_op((agreement.digest(text), text), world,
                                                payload=np.zeros(int(np.prod(carried[1]))), carry=True)
                    pending = self._compiled.pending = [check, None]
            self.__dict__["_calls"] = number
            # local inputs on "cuda:K", another GPU than the process's own: the graph is built and runs with that GPU
            # current (0.9 places such a graph on that device: its local inputs' placement @rank:K)
            key = next((t._device for t in tensors if t._placement is None), "cpu")
            if self._compiled is None:
                self._compile_for(flat, struct, tensors, key)
            call.name_errors = True
            try:
                with device_keys.current(key):
                    outs = self._compiled.run(values)
            except agreement.TurnOfAnother:
                # the carried check found another thread's turn: this call changed nothing and runs again, as the
                # same call
                self.__dict__["_calls"] = number - 1
                raise
            finally:
                if pending is not None:
                    self._compiled.pending = None
            if pending is not None and pending[1] is not None and pending[0].result is not None:
                buckets.remember_sum(outs[carried[0]], pending[1], world, pending[0].result)
        if self._graph_optimizers is not None:
            self._graph_optimizers.after_step()
        it = iter(outs)
        results = []
        for kind, info in self._out_struct[0]:
            if kind == "tensor":
                placement, device = info
                results.append(Tensor._make(next(it), placement, None, device))
            else:
                results.append(info)
        return _unflatten(self._out_struct[1], iter(results))

    def _compile(self, *args, **kwargs):
        """OneFlow 0.9's `Graph._compile(*args, **kwargs)`: what the first call does before it runs — build traced on
        these arguments and the plan compiled — without running the graph; what tools call to have a compiled graph
        to export (the documentation's cookies/oneflow2onnnx.md: `graph._compile(flow.randn(1, 3, 224, 224))`). The
        first call afterwards runs the plan compiled here, and must pass arguments of the same layout. A graph
        compiles once (0.9's assertion). OneFlow returns its output buffers, which hold no values until a call
        runs; here nothing is returned: the outputs are the calls'."""
        assert self._compiled is None, "nn.Graph " + self._name + " has already been compiled."
        flat, struct = _flatten((args, kwargs))
        tensors = [x for x in flat if isinstance(x, Tensor)]
        for t in tensors:
            if t.is_lazy:
                raise RuntimeError("nn.Graph '%s' was compiled with a lazy tensor: graphs cannot be nested"
                                   % self._name)
        _make_contiguous(tensors)
        key = next((t._device for t in tensors if t._placement is None), "cpu")
        agreement.in_turn(self._compile_for, flat, struct, tensors, key)

    @property
    def _is_compiled(self):
        """OneFlow 0.9's attribute (`flow.save(graph)` and `load_state_dict` read it)."""
        return self._compiled is not None

    def _compile_for(self, flat, struct, tensors, key):
        with device_keys.current(key):
            self._build_and_compile(flat, struct, tensors)
        self._compiled.check_inputs([t._value for t in tensors], [_input_layout(t) for t in tensors])
        self.__dict__["_in_devices"] = [_input_device(t) for t in tensors]

    def _check_arguments(self, flat, struct, tensors, values):
        if struct != self._in_struct:
            raise ValueError("nn.Graph '%s' was compiled for arguments shaped as %s, got %s (a graph's inputs are "
                             "fixed by its first call)" % (self._name, self._in_struct, struct))
        constants = [x for x in flat if not isinstance(x, Tensor)]
        if not _same_constants(constants, self._in_constants):
            raise ValueError("nn.Graph '%s': the non-tensor arguments %r differ from the first call's %r; they "
                             "were traced into the graph as constants" % (self._name, constants,
                                                                         self._in_constants))
        self._compiled.check_inputs(values, [_input_layout(t) for t in tensors])
        for t, want in zip(tensors, self.__dict__.get("_in_devices", ())):
            if _input_device(t) != want:  # OneFlow 0.9's words (RunLazyNNGraph, core/framework/nn_graph.cpp)
                raise GraphInputDeviceError(
                    "nn.Graph ONLY accepts static inputs tensor meta, please check whether your input tensor meta "
                    "each step is the same as the input of first call graph.\nThe excepted tensor meta is: %s, but "
                    "the actual tensor meta is: %s" % (_meta_string(t, want), _meta_string(t, _input_device(t))))

    def _spans_ranks(self, tensors):
        """Whether the graph is global in a world of several ranks (then its calls are global operations)."""
        spans = self.__dict__.get("_spans")
        if spans is None:
            spans = global_eager.world_size() > 1 and self._default_placement(tensors)[0]
            if self._compiled is not None:
                self.__dict__["_spans"] = spans
        return spans

    def _build_and_compile(self, flat, struct, tensors):
        started = time.perf_counter()
        self._args_repr.clear()
        self._outs_repr.clear()
        shallow = "(GRAPH:%s:%s)" % (self._name, type(self).__name__)
        self._log(0, shallow + " start building graph.")
        is_global, default = self._default_placement(tensors)
        trace = GraphTrace(self._name, "train" if self.training else "predict", default,
                           self.config.gradient_accumulation_steps)
        trace.op_records = graph_debug.OpRecords(self._name, self._debug_options)
        self.__dict__["_op_records"] = trace.op_records
        # the job's random ops (dropout) draw from streams seeded by the global generator's seed, alike on every rank
        trace.session.root_seed = generators.global_generator().initial_seed()
        scope = self._scope()
        # OneFlow 0.9 makes every state tensor (parameters and buffers) contiguous in place before it builds
        # (nn/graph/graph.py:660-664, 888 @ v0.9.0 `__ensure_state_tensors_contiguous`)
        _make_contiguous(self._state_tensors())
        check_optimized_parameters([opt for opt, _ in self._opts], scope.names)
        out_values, kinds, out_struct = self._trace_build(trace, scope, flat, struct)
        # OneFlow 0.9's words (nn/graph/graph.py build_graph / finish_complie_and_init_runtime)
        self._log(0, "%s building graph Done! Cost time: %ss.\n" % (shallow, round(time.perf_counter() - started, 2)))
        self._log(0, shallow + " start building plan.")
        plan_started = time.perf_counter()
        if self.config._amp:  # OneFlow 0.9's AutoMixedPrecision pass (passes/amp.py): CUDA ops alone
            trace.job.amp = self.config._amp_dtype
        if trace.job.is_train:
            optimizers = GraphOptimizers(self._opts, scope.names)
            scaler = self.__dict__.get("_grad_scaler")
            if scaler is not None:
                optimizers.loss_scale_policy = scaler._policy()
            self.__dict__["_graph_optimizers"] = trace.job.optimizer = optimizers
            trace.job.zero = self.config._switches.get("enable_zero")  # passes/zero.py
        # a rank that never compiles leaves the others waiting in the plan check: the timeout names the graph
        auto = _graph_auto_parallel.auto_parallel_conf(self.config)
        if auto is not None and auto.enable:
            trace.job.auto_parallel = auto  # the SBP search of passes/auto_parallel.py runs as the job compiles
            if trace.job.zero and auto.ignore_user_sbp_config:
                # OneFlow 0.9's OptimizerPlacementOptimizationPass: the search would unpin ZeRO's layouts
                warnings.warn("ZeRO optimization will be ignored when enabling AutoParallel to ignore user sbp "
                              "configuration", stacklevel=3)
                trace.job.zero = None
        with activity.operation("compiling nn.Graph '%s' (every rank must call it)" % self._name):
            compiled = CompiledGraph(trace, [_input_layout(t) for t in tensors], out_values, self._name,
                                     check_across_ranks=is_global)
        summary = getattr(trace.job, "auto_parallel_summary", None)
        if summary is not None:
            for line in summary.lines():
                self._log(0, shallow + " " + line)
        if trace.job.zero:
            self._take_zero_layouts(compiled)
        for name, tensor in trace.bindings.items():
            compiled.bind(name, _piece_getter(lambda t=tensor: t))
        if self._graph_optimizers is not None:
            for name, getter in self._graph_optimizers.state_getters().items():
                compiled.bind(name, _piece_getter(getter))
        compiled.finish_binding()
        self.__dict__["_compiled"] = compiled
        self.__dict__["_in_struct"] = struct
        self.__dict__["_in_constants"] = [x for x in flat if not isinstance(x, Tensor)]
        self.__dict__["_out_struct"] = (kinds, out_struct)
        self._load_additional()
        self._log(0, "%s building plan Done! Cost time: %ss.\n" % (shallow, round(time.perf_counter() - plan_started,
                                                                                  2)))
        self._log(1, "%s compiled: %d ops, %d steps on this rank, %s schedule." % (
            shallow, len(compiled.job.ops), len(compiled.plan.steps), compiled.schedule))
        if self._debug >= 1:
            self._log(1, str(self.explain_report()))

    def _take_zero_layouts(self, compiled):
        """ZeRO: the eager tensors bound to variables whose SBP the compile changed (optimizer states and
        parameters) take it, in place, as OneFlow 0.9's `NNGraph::InitRuntime` does (`set_data` with the variable
        op's new SBP): their logical values stay, each rank keeps its piece."""
        getters = self._graph_optimizers.state_getters() if self._graph_optimizers is not None else {}
        for spec in compiled.variable_specs():
            tensor = compiled.trace.bindings.get(spec.name)
            if tensor is None and spec.name in getters:
                tensor = getters[spec.name]()
            if tensor is None or not tensor.is_global or tensor._value.sbp == spec.sbp:
                continue
            value = global_eager.transfer(tensor._value, spec.placement, spec.sbp)
            tensor._set_value(value, None, None)

    def _default_placement(self, tensors):
        """(global graph?, where ops outside any tensor's placement go: the train step counter and the learning
        rates, on every rank — or this rank alone for a graph of local tensors)."""
        params = [p for b in self._blocks.values() for p in b._module.parameters()]
        first = next((t for t in list(tensors) + params if t.is_global), None)
        if first is None:
            tag = tensors[0]._value.placement.device_tag if tensors else "cpu"
            return False, global_eager.local_placement(tag)
        tag = first._value.placement.device_tag
        return True, IrPlacement(tag, [(r, 0) for r in range(global_eager.world_size())])

    def _trace_build(self, trace, scope, flat, struct):
        """Runs build once on lazy inputs; returns the lazy values it returned, what each returned leaf is, and
        the structure of the result."""
        lazy_args = []
        names = {id(x): n for x, n in graph_debug.arg_names("_%s_input" % self._name, *_unflatten(struct, iter(flat)))}
        for i, x in enumerate(flat):
            if isinstance(x, Tensor):
                v = trace.add_input(len(trace.inputs), x._value)
                lazy_x = Tensor._make(v, x._placement, x._sbp, x._device)
                # OneFlow 0.9: the input op's output requires grad when the eager tensor passed in does
                # (AutogradInterpreter::Apply), so build can retain and read its gradient (`x.grad`)
                lazy_x.requires_grad_flag = x.requires_grad_flag and x.dtype.is_floating
                lazy_args.append(lazy_x)
                name = names.get(id(x), "_%s_input.%d" % (self._name, i))
                trace.op_records.name_blob(v.blob, name + "/out")
                self._args_repr.append("(INPUT:%s:%s)" % (name, tensor_text(x)))
                self._log(1, self._args_repr[-1])
            else:
                lazy_args.append(x)
        args, kwargs = _unflatten(struct, iter(lazy_args))
        with lazy.tracing(trace, scope):
            returned = self.build(*args, **kwargs)
            out_flat, out_struct = _flatten(returned)
            out_values, kinds = [], []
            out_names = {id(x): n for x, n in graph_debug.arg_names("_%s_output" % self._name,
                                                                       out_flat, {})}
            for k, x in enumerate(out_flat):
                if not isinstance(x, Tensor):
                    kinds.append(("value", x))
                    continue
                if not x.is_lazy:  # an eager tensor returned as it is: read through its variable
                    x = lazy.apply("identity", [x], {})[0]
                out_values.append(x._value)
                kinds.append(("tensor", (x._placement, x._device)))
                self._outs_repr.append("(OUTPUT:%s:%s)" % (out_names.get(id(out_flat[k]), "_%s_output.%d" % (
                    self._name, k)), _lazy_text(x)))
                self._log(1, self._outs_repr[-1])
        if trace.job.is_train and not trace.job.losses:
            raise RuntimeError("nn.Graph '%s' has an optimizer but build() called no loss.backward()" % self._name)
        trace.job.variable_grads = lazy.variable_gradients(trace)
        return out_values, kinds, out_struct

    def _state_tensors(self):
        states = {}
        for block in self._blocks.values():
            for t in list(block._module.parameters()) + list(block._module.buffers()):
                if t is not None:
                    states.setdefault(id(t), t)
        return list(states.values())

    def _scope(self):
        modules, names, checkpointing, blocks = {}, {}, {}, {}
        for top, block in self._blocks.items():
            for b in block._blocks():
                cfg = b._config
                if id(b._module) not in modules:
                    blocks[id(b._module)] = b
                    modules[id(b._module)] = (b._name, cfg.stage_id, cfg.stage_placement)
                    if cfg.activation_checkpointing is not None:
                        checkpointing[id(b._module)] = cfg.activation_checkpointing
            for pname, p in block._module.named_parameters(prefix=top):
                names.setdefault(id(p), pname)
            for bname, buf in block._module.named_buffers(prefix=top):
                names.setdefault(id(buf), bname)
        trainable = {id(p) for opt, _ in self._opts for g in opt.param_groups for p in g["params"]
                     if p.requires_grad}
        return lazy.GraphScope(modules, names, trainable, checkpointing, blocks)

    # --- state -----------------------------------------------------------------------------------------------
    def state_dict(self, destination=None):
        """{block name: its module's state dict} and, once compiled, the graph's other states (optimizer state,
        the train step counter) by variable name."""
        if destination is None:
            destination = collections.OrderedDict()
        for name, block in self._blocks.items():
            destination[name] = block._module.state_dict()
        if self._compiled is None:
            destination.update(self._to_load)
            return destination
        for name, tensor in self._additional_states().items():
            destination[name] = tensor
        return destination

    def _additional_states(self):
        out = collections.OrderedDict()
        compiled = self._compiled
        getters = self._graph_optimizers.state_getters() if self._graph_optimizers is not None else {}
        for spec in compiled.variable_specs():
            if spec.name in compiled.trace.bindings:
                continue
            if spec.name in getters:
                out[spec.name] = getters[spec.name]().detach()
            else:
                # the step counter: the job's variable, by the name OneFlow 0.9's graphs give it
                name = _TRAIN_STEP if spec.name.startswith(_TRAIN_STEP + "-") else spec.name
                out[name] = Tensor._make(global_eager.Value(_meta(spec), spec.placement, spec.sbp,
                                                                 [spec.shards[i] for i in sorted(spec.shards)]),
                                              _flow_placement(spec.placement), None,
                                              "cuda" if spec.placement.device_tag == "gpu" else "cpu")
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Loads each block's module state; the other entries (optimizer states, step counter) are copied into the
        graph's states when it compiles. Only before the first call, as OneFlow."""
        assert self._compiled is None, "nn.Graph's state dict can only be loaded before the first call of a graph."
        for name, item in state_dict.items():
            if name in self._blocks:
                self._blocks[name]._module.load_state_dict(item, strict)
            else:
                assert isinstance(item, Tensor), "graph state '%s' must be a tensor" % name
                self._to_load[name] = item

    def _load_additional(self):
        if not self._to_load:
            return
        from oneflow_compat._global import state_values

        states = self._additional_states()
        unknown = [k for k in self._to_load if k not in states]
        if unknown:
            raise KeyError("nn.Graph '%s': loaded states %s are not states of this graph (it has %s)"
                           % (self._name, unknown, list(states)))
        getters = self._graph_optimizers.state_getters() if self._graph_optimizers is not None else {}
        for name, value in self._to_load.items():
            target = getters[name]() if name in getters else states[name]
            state_values.copy_into(target, value)
        if _TRAIN_STEP in self._to_load and self._graph_optimizers is not None:
            # OneFlow 0.9's graph Adam reads its bias correction from the train step variable
            # (job_rewriter/adam_optm.cpp: adam_bias_correction_factor of train_step); here it counts the
            # optimizer's steps, so a loaded step count continues it as OneFlow's loaded train step does
            step = int(states[_TRAIN_STEP].numpy().reshape(-1)[0])
            for opt, _ in self._graph_optimizers.added:
                opt._step_count = step
        self._to_load.clear()

    # --- showing -----------------------------------------------------------------------------------------------
    def debug(self, v_level=0, *, ranks=None, mode=True, max_py_stack_depth=2, only_user_py_stack=True,
              op_repr_with_py_stack=False):
        """Debug output while the graph builds and compiles (printed by the chosen ranks, rank 0 by default):
        v_level 0 the build stages, 1 also the graph's inputs and outputs, each module's calls and the compiled
        plan (`explain_report`); -1 turns it off. `op_repr_with_py_stack`: `repr(graph)` shows where each op was
        created (`max_py_stack_depth` frames, of the user's code alone when `only_user_py_stack`)."""
        assert isinstance(v_level, int) and -1 <= v_level <= 3, "v_level must be an int in [-1, 3]"
        if ranks is None:
            ranks = [0]
        elif isinstance(ranks, int):
            ranks = [ranks]
        elif not isinstance(ranks, list):
            raise ValueError("ranks must be int or List[int].")
        assert isinstance(max_py_stack_depth, int) and max_py_stack_depth >= 0, "The min max stack depth is 0."
        assert isinstance(only_user_py_stack, bool)
        assert isinstance(op_repr_with_py_stack, bool)
        self.__dict__["_debug"] = v_level if mode else -1
        self.__dict__["_debug_ranks"] = list(ranks)
        self._debug_options.max_py_stack_depth = max_py_stack_depth
        self._debug_options.only_user_py_stack = only_user_py_stack
        self._debug_options.op_repr_with_py_stack = op_repr_with_py_stack

    def _log(self, level, text):
        if self._debug >= level and (-1 in self._debug_ranks or global_eager.rank() in self._debug_ranks):
            print(text, flush=True)

    def explain_report(self):
        """The compiled plan (`flow.explain(graph)`): its ops per pipeline stage and every boxing with the bytes it
        moves per micro-batch (`runtime/graph_report.py`)."""
        from oneflow_compat.runtime.graph_report import graph_report

        if self._compiled is None:
            raise RuntimeError("nn.Graph '%s' is not compiled yet: call it once before explaining it" % self._name)
        return graph_report(self._compiled)

    def _operator_lines(self, path):
        """The OPERATOR lines of the ops created in module `path` ('' the graph's own), once compiled."""
        if self._compiled is None or self._op_records is None:
            return []
        return self._op_records.operator_lines(path, self._compiled.job,
                                               lambda pl: repr(_flow_placement(pl)))

    def __repr__(self):
        lines = [repr(self.config)]
        lines.extend(self._args_repr)
        lines.extend(repr(b) for b in self._blocks.values())
        lines.extend(self._operator_lines(""))
        lines.extend(self._outs_repr)
        head = "(GRAPH:%s:%s)" % (self._name, type(self).__name__)
        return head + ": (\n" + "\n".join(indent(line, 2) for line in lines) + "\n)"


def _make_contiguous(tensors):
    """OneFlow 0.9's `__ensure_input_tensors_contiguous` / `__ensure_state_tensors_contiguous` (nn/graph/graph.py
    :660-664, :1441-1448 @ v0.9.0): a non-contiguous local tensor (a view with strides of its own) is made
    contiguous IN PLACE (`contiguous_()`: the caller's tensor is changed, as in 0.9) before the graph reads it."""
    from oneflow_compat._global import views

    for t in tensors:
        if t._placement is None and not t.is_lazy and not views.is_contiguous(t):
            views.contiguous_(t)


def _lazy_text(t):
    parts = []
    if t.is_global:
        parts.append("placement=%r" % (t.placement,))
    parts.append("size=%s" % (tuple(t.shape),))
    parts.append("dtype=oneflow.%s" % t.dtype.name)
    return "tensor(..., %s)" % ", ".join(parts)


def _same_constants(a, b):
    try:
        return len(a) == len(b) and all(x is y or bool(x == y) for x, y in zip(a, b))
    except Exception:  # values without a truth value for ==: only the same objects count as unchanged
        return all(x is y for x, y in zip(a, b))


class GraphInputDeviceError(GraphInputError, RuntimeError):
    """A call's local input on another device than the first call's: a RuntimeError as OneFlow 0.9's, a
    GraphInputError (ValueError) as this project's other input checks."""


def _input_device(t):
    return None if t._placement is not None else str(t.device)


def _meta_string(t, device):
    """OneFlow 0.9's GetTensorMetaString of a local tensor (core/framework/nn_graph.cpp)."""
    return "shape=(%s), dtype=oneflow.%s, device=%s" % (",".join(str(d) for d in t.shape), t.dtype.name, device)


def _input_layout(t):
    if t.is_global:
        return layout_of(t._value, True, tuple(t.sbp))
    return layout_of(t._value, False)


def _piece_getter(tensor_of):
    def piece():
        return tensor_of()._value.pieces[0]
    return piece


def _meta(spec):
    from oneflow_compat.ir.graph import TensorMeta

    return TensorMeta(spec.shape, spec.dtype)


def _flow_placement(ir_placement):
    tag = "cuda" if ir_placement.device_tag == "gpu" else "cpu"
    return Placement(tag, [m for m, _ in ir_placement.pairs])


# --- arguments and results as flat lists -----------------------------------------------------------------------
def _flatten(obj):
    """(flat leaves, structure): tuples, lists and dicts are walked; everything else is a leaf."""
    flat = []

    def walk(x):
        if isinstance(x, tuple) and not hasattr(x, "_fields"):
            return ("tuple", tuple(walk(v) for v in x))
        if isinstance(x, list):
            return ("list", tuple(walk(v) for v in x))
        if isinstance(x, dict):
            return ("dict", tuple((k, walk(v)) for k, v in x.items()))
        flat.append(x)
        return ("leaf",)

    return flat, walk(obj)


def _unflatten(struct, leaves):
    kind = struct[0]
    if kind == "leaf":
        return next(leaves)
    if kind == "tuple":
        return tuple(_unflatten(s, leaves) for s in struct[1])
    if kind == "list":
        return [_unflatten(s, leaves) for s in struct[1]]
    return {k: _unflatten(s, leaves) for k, s in struct[1]}


# --- api-autograd: OneFlow 0.9's auto_parallel.rst (GraphConfig's auto-parallel settings) -------------------------
from oneflow_compat._global import graph_auto_parallel as _graph_auto_parallel  # noqa: E402

_graph_auto_parallel.install(GraphConfig)
