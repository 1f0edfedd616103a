"""The deprecated v0.1/v0.2 optimizer API: `func_config.train.primary_lr(lr)` +
`func_config.train.model_update_conf({...})` (legacy-api.md §2.4), turned into an equivalent optimizer object.

OneFlow's ModelUpdateConfCompatiblePass made one optimizer over every variable of the job from these, with
`primary_lr` as base learning rate; `secondary_lr` was accepted and dropped. The dict uses the protobuf field
names of `NormalModelUpdateOpUserConf` (job_conf.proto) and `learning_rate_schedule_conf.proto`, e.g.
`{"momentum_conf": {"beta": 0.9}, "learning_rate_decay": {"cosine_conf": {"decay_batches": 1000}},
"warmup_conf": {"linear_conf": {"warmup_batches": 100, "start_multiplier": 0.1}}}`.
"""
from oneflow_compat.framework import trace
from oneflow_compat.optimizer import grad_clipping, lr_scheduler, warmup
from oneflow_compat.optimizer.optimizers import LAMB, LARS, Adam, LazyAdam, RMSProp, SGD

# Update rule -> (constructor, {proto field: (optimizer keyword, proto default)}).
_UPDATE_RULES = {
    "naive_conf": (lambda sched, **kw: SGD(sched, momentum=0), {}),
    "momentum_conf": (lambda sched, **kw: SGD(sched, momentum=kw["beta"]), {"beta": ("beta", 0.9)}),
    "rmsprop_conf": (RMSProp, {"decay_rate": ("decay_rate", 0.99), "epsilon": ("epsilon", 1e-8),
                               "centered": ("centered", False)}),
    "lars_conf": (LARS, {"momentum_beta": ("momentum_beta", 0.9), "epsilon": ("epsilon", 1e-9),
                         "lars_coefficient": ("lars_coefficient", 0.0001)}),
    "adam_conf": (Adam, {"beta1": ("beta1", 0.9), "beta2": ("beta2", 0.999), "epsilon": ("epsilon", 1e-8),
                         "do_bias_correction": ("do_bias_correction", False)}),
    "lazy_adam_conf": (LazyAdam, {"beta1": ("beta1", 0.9), "beta2": ("beta2", 0.999), "epsilon": ("epsilon", 1e-8)}),
    "lamb_conf": (LAMB, {"beta1": ("beta1", 0.9), "beta2": ("beta2", 0.999), "epsilon": ("epsilon", 1e-8)}),
}
_OTHER_KEYS = ("learning_rate_decay", "warmup_conf", "clip_conf", "weight_decay_conf")


def _fields(section, body, known, required=()):
    body = dict(body or {})
    unknown = set(body) - set(known)
    if unknown:
        raise ValueError("model_update_conf: %s has no field(s) %s (known: %s)"
                         % (section, ", ".join(sorted(unknown)), ", ".join(known)))
    missing = [name for name in required if name not in body]
    if missing:
        raise ValueError("model_update_conf: %s needs %s" % (section, ", ".join(missing)))
    return body


def _single_choice(section, body, choices):
    if not isinstance(body, dict) or len(body) != 1 or next(iter(body)) not in choices:
        raise ValueError("model_update_conf: %s must have exactly one of %s, got %r"
                         % (section, ", ".join(choices), body))
    return next(iter(body.items()))


def _warmup_from(conf):
    if conf is None:
        return None
    kind, body = _single_choice("warmup_conf", conf, ("constant_conf", "linear_conf"))
    if kind == "constant_conf":
        body = _fields(kind, body, ("warmup_batches", "multiplier"), required=("warmup_batches", "multiplier"))
        return warmup.constant(body["warmup_batches"], body["multiplier"])
    body = _fields(kind, body, ("warmup_batches", "start_multiplier"), required=("warmup_batches",
                                                                                 "start_multiplier"))
    return warmup.linear(body["warmup_batches"], body["start_multiplier"])


def _ratio_decay(cls, kind, body, base_lr, warmup_conf):
    body = _fields(kind, body, ("decay_batches", "decay_rate", "staircase"), required=("decay_batches", "decay_rate"))
    return cls(base_lr, body["decay_batches"], body["decay_rate"], staircase=body.get("staircase", False),
               warmup=warmup_conf)


def _scheduler_from(conf, base_lr, warmup_conf):
    if conf is None:
        return lr_scheduler.PiecewiseConstantScheduler([], [base_lr], warmup=warmup_conf)
    kind, body = _single_choice("learning_rate_decay", conf, (
        "exponential_conf", "inverse_time_conf", "natural_exp_conf", "piecewise_constant_conf", "polynomial_conf",
        "cosine_conf", "linear_cosine_conf", "piecewise_scaling_conf"))
    if kind == "exponential_conf":
        return _ratio_decay(lr_scheduler.ExponentialScheduler, kind, body, base_lr, warmup_conf)
    if kind == "inverse_time_conf":
        return _ratio_decay(lr_scheduler.InverseTimeScheduler, kind, body, base_lr, warmup_conf)
    if kind == "natural_exp_conf":
        return _ratio_decay(lr_scheduler.NaturalExpScheduler, kind, body, base_lr, warmup_conf)
    if kind == "piecewise_constant_conf":
        body = _fields(kind, body, ("boundaries", "values"), required=("values",))
        scheduler = lr_scheduler.PiecewiseConstantScheduler(list(body.get("boundaries", [])), list(body["values"]),
                                                            warmup=warmup_conf)
        scheduler.base_lr = base_lr  # warmup scales primary_lr, not values[0], on this path
        return scheduler
    if kind == "polynomial_conf":
        body = _fields(kind, body, ("decay_batches", "end_learning_rate", "power", "cycle"),
                       required=("decay_batches",))
        return lr_scheduler.PolynomialScheduler(base_lr, body["decay_batches"],
                                                end_learning_rate=body.get("end_learning_rate", 0.0001),
                                                power=body.get("power", 1.0), cycle=body.get("cycle", False),
                                                warmup=warmup_conf)
    if kind == "cosine_conf":
        body = _fields(kind, body, ("decay_batches", "alpha"), required=("decay_batches",))
        return lr_scheduler.CosineScheduler(base_lr, body["decay_batches"], alpha=body.get("alpha", 0.0),
                                            warmup=warmup_conf)
    if kind == "linear_cosine_conf":
        body = _fields(kind, body, ("decay_batches", "num_periods", "alpha", "beta"), required=("decay_batches",))
        return lr_scheduler.LinearCosineScheduler(base_lr, body["decay_batches"],
                                                  num_periods=body.get("num_periods", 0.5),
                                                  alpha=body.get("alpha", 0.0), beta=body.get("beta", 0.001),
                                                  warmup=warmup_conf)
    # piecewise_scaling_conf: the proto's `scales` already holds len(boundaries)+1 factors (the first one for
    # steps before the first boundary).
    body = _fields(kind, body, ("boundaries", "scales"), required=("scales",))
    boundaries, scales = list(body.get("boundaries", [])), list(body["scales"])
    if not (len(boundaries) + 1 == len(scales)):
        raise AssertionError("piecewise_scaling_conf needs len(boundaries) + 1 scales")
    scheduler = lr_scheduler.PiecewiseScalingScheduler(base_lr, boundaries, scales[1:], warmup=warmup_conf)
    scheduler.scale = scales
    return scheduler


def _clipping_from(conf):
    if conf is None:
        return None
    kind, body = _single_choice("clip_conf", conf, ("clip_by_global_norm",))
    # v0.3 names the field clip_norm; later protos renamed it max_norm.
    body = _fields(kind, body, ("clip_norm", "max_norm"))
    if "clip_norm" not in body and "max_norm" not in body:
        raise ValueError("model_update_conf: clip_by_global_norm needs clip_norm")
    return grad_clipping.by_global_norm(body.get("clip_norm", body.get("max_norm")))


def _patterns(section, body):
    body = _fields(section, body, ("pattern",))
    patterns = body.get("pattern", [])
    return [patterns] if isinstance(patterns, str) else list(patterns)


def optimizer_from_model_update_conf(conf, primary_lr, secondary_lr=None):
    """The optimizer OneFlow built from `train.model_update_conf(conf)` and `train.primary_lr(primary_lr)`;
    it updates all variables of the job (`variables=None`). `secondary_lr` is ignored, as in OneFlow."""
    if not isinstance(conf, dict):
        raise TypeError("model_update_conf must be a dict, got %s" % type(conf).__name__)
    unknown = set(conf) - set(_UPDATE_RULES) - set(_OTHER_KEYS)
    if unknown:
        raise ValueError("model_update_conf has no field(s) %s" % ", ".join(sorted(unknown)))
    rules = [key for key in conf if key in _UPDATE_RULES]
    if not rules:
        raise NotImplementedError("model_update_conf names no update rule (one of %s)" % ", ".join(_UPDATE_RULES))
    if len(rules) > 1:
        raise ValueError("model_update_conf names several update rules: %s" % ", ".join(rules))
    if primary_lr is None:
        raise ValueError("model_update_conf needs func_config.train.primary_lr(...)")

    scheduler = _scheduler_from(conf.get("learning_rate_decay"), primary_lr, _warmup_from(conf.get("warmup_conf")))
    rule = rules[0]
    constructor, field_map = _UPDATE_RULES[rule]
    body = _fields(rule, conf[rule], tuple(field_map))
    kwargs = {keyword: body.get(field, default) for field, (keyword, default) in field_map.items()}
    optimizer = constructor(scheduler, **kwargs)
    optimizer.grad_clipping = _clipping_from(conf.get("clip_conf"))

    decay = conf.get("weight_decay_conf")
    if decay is not None:
        decay = _fields("weight_decay_conf", decay, ("weight_decay_rate", "includes", "excludes"),
                        required=("weight_decay_rate",))
        if "includes" in decay and "excludes" in decay:
            raise ValueError("model_update_conf: weight_decay_conf takes includes or excludes, not both")
        includes = _patterns("includes", decay["includes"]) if "includes" in decay else None
        excludes = _patterns("excludes", decay["excludes"]) if "excludes" in decay else None
        optimizer.set_weight_decay(decay["weight_decay_rate"], includes, excludes)
    return optimizer


trace.set_legacy_optimizer_factory(optimizer_from_model_update_conf)
