"""Variables inside a job: their specs, and creating or reusing them (what `flow.get_variable`, the layers and
the optimizer pass call). The session keeps the specs and their storage (`runtime/variables.py`)."""
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ir import sbp as sbp_mod
from oneflow_compat.kernels.random import derived_seed
from oneflow_compat.ops import registry


class VarSpec:
    def __init__(self, name, shape, dtype, initializer, regularizer, trainable, seed, placement, sbp,
                 model_name=None, init_value=None):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype
        self.initializer = initializer
        self.regularizer = regularizer
        self.trainable = trainable
        self.seed = seed
        self.placement = placement
        self.sbp = sbp
        self.model_name = model_name
        self.init_value = init_value  # a constant fill (optimizer state, step counter), instead of initializer
        self.shards = {}  # device index in placement -> array (only devices of this process)

    def __repr__(self):
        return "VarSpec(%s, %s, %s, %s %s)" % (self.name, self.shape, self.dtype.name, self.placement, self.sbp)


def shares_replicas(placement, sbp):
    """Whether the replicas of a broadcast blob on this process's CPU devices are one array: in-process CPU
    "devices" share memory, so keeping n copies of a variable (and updating each) would only cost time."""
    # B on every axis of a mesh is the same: the devices all hold the whole value (a boxing's all-reduce of partial
    # sums into them makes one shared array, transitions.makes_shared_fresh_array, whose in-place consumer must then
    # run once, not once per device)
    broadcast = sbp == sbp_mod.B or (sbp_mod.is_nd(sbp) and all(s == sbp_mod.B for s in sbp.sbps))
    return placement.device_tag == "cpu" and placement.parallel_num > 1 and broadcast


def default_seed(root_seed, name):
    """A variable's seed when none is given: a function of the session's root seed and the variable's name only,
    so every rank and every device count agrees on it."""
    return derived_seed(root_seed, name)


def full_name(ctx, name):
    return "-".join(ctx.namespaces + [name]) if ctx.namespaces else name


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=None, model_name=None,
                 random_seed=None, sbp=None, reuse=True, init_value=None, placement=None, apply_namespace=True):
    ctx = builder.current("flow.get_variable")
    if shape is not None and not isinstance(shape, (list, tuple)):
        raise AssertionError("param shape should be a list or tuple of dimension")
    fname = full_name(ctx, name) if apply_namespace else name
    job, session = ctx.job, ctx.session
    if fname in job.variable_ops:
        if not reuse:
            raise AssertionError("variable '%s' already exists, getting the same variable is not allowed when param "
                                 "reuse is False" % fname)
        return job.variable_ops[fname].outputs[0]
    spec = session.vars.get(fname)
    if dtype is None:
        dtype = job.config.default_data_type_ if job.config is not None else dtypes.float32
    dtype = dtypes.as_dtype(dtype)
    if spec is None:
        if shape is None:
            raise ValueError("variable '%s' does not exist yet, so its shape must be given" % fname)
        if initializer is None and init_value is None and job.config is not None:
            initializer = job.config.default_initializer_conf_
        if initializer is None and init_value is None:
            raise ValueError("variable '%s' has no initializer (pass initializer=..., or set "
                             "function_config.default_initializer_conf)" % fname)
        seed = random_seed if random_seed is not None else default_seed(session.root_seed or 0, fname)
        pl = placement or ctx.placement
        sbp = sbp if sbp is not None else sbp_mod.B
        if pl.is_nd and not sbp_mod.is_nd(sbp):  # on a mesh: that symbol on every mesh axis
            sbp = sbp_mod.nd((sbp,) * len(pl.hierarchy), pl.hierarchy)
        spec = VarSpec(fname, tuple(int(d) for d in shape), dtype, initializer, regularizer,
                       True if trainable is None else bool(trainable), seed, pl, sbp, model_name, init_value)
        session.vars.add(spec)
        if ctx.eager is not None:
            session.vars.initialize(spec)
    else:
        if shape is not None and tuple(shape) != spec.shape:
            raise ValueError("variable '%s' already exists with shape %s; requested shape %s" % (
                fname, spec.shape, tuple(shape)))
        if dtypes.as_dtype(dtype) is not spec.dtype and dtype is not None and shape is not None:
            raise ValueError("variable '%s' already exists with dtype %s; requested %s" % (
                fname, spec.dtype.name, dtype.name))
    ctx.placements.append(spec.placement)
    ctx.views.append("consistent")
    try:
        op = registry.new_op("variable", [], {"name": fname, "spec": spec}, name=fname,
                             out_hints={0: spec.sbp} if spec.placement.parallel_num > 1 else None)
    finally:
        ctx.placements.pop()
        ctx.views.pop()
    job.variable_ops[fname] = op
    out = op.outputs[0]
    if ctx.view == "mirrored":
        out = registry.apply("cast_to_mirrored", [out])
    return out
