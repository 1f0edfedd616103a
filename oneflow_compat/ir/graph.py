"""The logical graph: ops, the blobs they produce, and the job that holds them.

A `LazyBlob` is what user code sees inside a job function: a logical tensor with a static (for dynamic blobs:
maximum) shape, a dtype and no value. Ops are appended to their job in creation order, which is a topological
order; passes append more ops (backward, optimizer) the same way.
"""
import collections
import itertools


class TensorMeta:
    __slots__ = ("shape", "dtype", "is_dynamic")

    def __init__(self, shape, dtype, is_dynamic=False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype
        self.is_dynamic = bool(is_dynamic)

    def __repr__(self):
        return "TensorMeta(%s, %s%s)" % (self.shape, self.dtype.name, ", dynamic" if self.is_dynamic else "")


class Op:
    __slots__ = ("name", "type", "inputs", "attrs", "outputs", "placement", "view", "in_hints", "out_hints",
                 "grad_hints", "sbp_in", "sbp_out", "job", "defn", "section", "eager_outputs")

    def __init__(self, job, name, op_type, defn, inputs, attrs, placement, view):
        self.job = job
        self.name = name
        self.type = op_type
        self.defn = defn
        self.inputs = list(inputs)
        self.attrs = attrs
        self.outputs = []
        self.placement = placement
        self.view = view  # "consistent" or "mirrored"
        self.in_hints = {}  # input index -> SBP the consumer must read (with_distribute)
        self.out_hints = {}  # output index -> SBP the op must produce (variables, parallel_cast)
        self.grad_hints = {}  # input index -> SBP of that input's gradient (parallel_cast gradient_distribute)
        self.sbp_in = None  # chosen by SBP inference
        self.sbp_out = None
        self.section = "forward"  # forward | backward | optimizer

    def __repr__(self):
        return "<op %s:%s>" % (self.name, self.type)


class LazyBlob:
    """A logical tensor inside a job function (the legacy `BlobDesc` / consistent or mirrored blob).

    What the IR knows of a blob is defined here. Its operators (`a + b` is `flow.math.add`), `distribute` /
    `with_distribute` and eager `.numpy()` are API built on top of it: the surface installs them
    (`_api/blob_methods.py`), as JAX installs array methods on its tracers from above.
    """

    __array_priority__ = 1000  # so that `ndarray + blob` defers to the blob's reflected operator

    def __init__(self, op, index, meta, hint=None):
        self.op = op
        self.index = index
        self.meta = meta
        self.hint = hint  # SBP a consumer must read this handle with (with_distribute)

    # --- static description -------------------------------------------------------------------------------
    @property
    def shape(self):
        return self.meta.shape

    @property
    def static_shape(self):
        return self.meta.shape

    @property
    def dtype(self):
        return self.meta.dtype

    @property
    def is_dynamic(self):
        return self.meta.is_dynamic

    @property
    def is_tensor_list(self):
        """A tensor-list blob (OneFlow v0.3.4: a tp.ListListNumpy placeholder or tensor_buffer_to_tensor_list's
        output): its op carries the attribute `tensor_list`."""
        return self.index == 0 and self.op.attrs.get("tensor_list") is True

    @property
    def op_name(self):
        return self.op.name

    @property
    def blob_name(self):
        return "out" if self.index == 0 else "out_%d" % self.index

    @property
    def logical_blob_name(self):
        return "%s/%s" % (self.op.name, self.blob_name)

    unique_name = logical_blob_name
    lbn = logical_blob_name

    @property
    def parallel_conf(self):
        return self.op.placement

    @property
    def placement(self):
        return self.op.placement

    @property
    def is_mirrored(self):
        return self.op.view == "mirrored"

    @property
    def split_axis(self):
        return 0

    batch_axis = split_axis

    def same_value(self, other):
        return self.op is other.op and self.index == other.index

    def key(self):
        return (self.op.name, self.index)

    def __repr__(self):
        return "LazyBlob(name=%s, shape=%s, dtype=%s%s)" % (
            self.logical_blob_name, self.shape, self.dtype.name, ", dynamic" if self.is_dynamic else "")

    def __len__(self):
        return self.shape[0]

    def __bool__(self):
        raise TypeError("a lazy blob has no truth value inside a job function (blob %s)" % self.logical_blob_name)

    __hash__ = object.__hash__  # blobs stay usable as keys although the surface gives them an elementwise __eq__


class Job:
    """One job function's logical graph plus what the passes need to know about it."""

    def __init__(self, name, job_type, config):
        self.name = name
        self.type = job_type  # "train" | "predict"
        self.config = config
        self.ops = []
        self.op_names = {}
        self.inputs = []  # input ops, in parameter order
        self.output_blobs = []  # flat list of returned blobs
        self.output_structure = None
        self.losses = []
        self.optimizer = None
        self.diff_watches = []  # (blob, handler): watch_diff requests, built by autodiff
        self.variable_ops = {}  # full variable name -> variable op of this job
        self.raw_grads = []  # train jobs: each variable's gradient before scaling (summed by grad accumulation)
        # nn.Graph: {blob key: identity op} standing for the gradient of that blob that build() read (`t.grad`),
        # rewired to the gradient blob by passes/autodiff.py `build_backward`
        self.grad_requests = collections.OrderedDict()
        # set when the job is traced, read by the passes and the plan (which never look at the config's scopes)
        self.default_placement = None  # where ops go outside any placement scope
        self.zero = None  # nn.Graph's enable_zero settings (passes/zero.py), None without ZeRO
        # mixed precision (passes/amp.py): the dtype white ops compute in, None without; the release's rules
        # (ops/amp_lists.py: None = 0.9's, nn.Graph's enable_amp; V04 = the legacy enable_auto_mixed_precision)
        self.amp = None
        self.amp_rules = None
        self.micro_batches = 1  # train jobs: num_gradient_accumulation_steps; a call runs this many micro-batches
        # one counter per prefix, as OneFlow's UniqueStr: a generated name (and the seed of a random op derived
        # from it) does not shift when the script adds ops of other kinds, e.g. the parallel casts a model-parallel
        # configuration inserts, so such configurations draw the same dropout masks as one device
        self._ids = collections.defaultdict(itertools.count)

    @property
    def is_train(self):
        return self.type == "train"

    def unique_name(self, prefix):
        while True:
            name = "%s_%d" % (prefix, next(self._ids[prefix]))
            if name not in self.op_names:
                return name

    def add(self, op):
        if op.name in self.op_names:
            raise ValueError("op name '%s' is used twice in job '%s'" % (op.name, self.name))
        self.ops.append(op)
        self.op_names[op.name] = op
        return op
