"""`flow.scope`: placement, logical view and namespace scopes."""
from oneflow_compat.framework import client_mode
from oneflow_compat.ir import builder
from oneflow_compat.ir import placement as placement_mod


class PlacementScope:
    """`flow.scope.placement(tag, ids)`: a context manager inside job functions; outside, an inert value for
    `function_config.default_placement_scope`."""

    def __init__(self, device_tag, machine_device_ids, hierarchy=None):
        client_mode.use(client_mode.LEGACY, "flow.scope.placement")
        # v0.4.0 `placement_util.api_placement`: hierarchy is a list, tuple or Size (or None), the shape of the
        # device mesh the devices form in their parallel order (ops in the scope then take one SBP per mesh axis)
        if hierarchy is not None and not isinstance(hierarchy, (list, tuple)):
            raise TypeError("flow.scope.placement: hierarchy must be a list or tuple of ints, got %r" % (hierarchy,))
        self.parsed = placement_mod.Placement.parse(device_tag, machine_device_ids, hierarchy)
        self.hierarchy = None if hierarchy is None else tuple(int(h) for h in hierarchy)

    def resolve(self, session):
        from oneflow_compat.backend import devices

        p = self.parsed
        tag = devices.resolve_tag(p.device_tag)
        if p.device_tag == "gpu" and session is not None:
            n = session.resource.devices_per_machine
            for m, d in p.pairs:
                if d >= n:
                    raise ValueError("placement %s uses gpu device %d of machine %d, but only %d device(s) per "
                                     "machine are configured (flow.config.gpu_device_num)" % (p, d, m, n))
        return placement_mod.Placement(tag, p.pairs, requested_tag=p.device_tag, hierarchy=self.hierarchy)

    def __enter__(self):
        ctx = builder.current("flow.scope.placement as a context")
        ctx.placements.append(self.resolve(ctx.session))
        self._ctx = ctx
        return self

    def __exit__(self, *exc):
        self._ctx.placements.pop()
        return False


def placement(device_tag, machine_device_ids, hierarchy=None):
    return PlacementScope(device_tag, machine_device_ids, hierarchy)


class _View:
    name = None

    def __enter__(self):
        ctx = builder.current("flow.scope.%s_view() as a context" % self.name)
        ctx.views.append(self.name)
        self._ctx = ctx
        return self

    def __exit__(self, *exc):
        self._ctx.views.pop()
        return False


class MirroredView(_View):
    name = "mirrored"


class ConsistentView(_View):
    name = "consistent"


def mirrored_view():
    return MirroredView()


def consistent_view():
    return ConsistentView()


DistributeMirroredStrategy = MirroredView
DistributeConsistentStrategy = ConsistentView


def mirrored_view_enabled():
    ctx = builder.current_or_none()
    return ctx is not None and ctx.view == "mirrored"


def consistent_view_enabled():
    ctx = builder.current_or_none()
    return ctx is None or ctx.view == "consistent"


class namespace:  # noqa: N801 - legacy name
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        ctx = builder.current("flow.scope.namespace")
        ctx.namespaces.append(self.name)
        self._ctx = ctx
        return self

    def __exit__(self, *exc):
        self._ctx.namespaces.pop()
        return False


def current_scope():
    """`flow.scope.current_scope()`: the scope of the job being built (the same object as flow.current_scope())."""
    from oneflow_compat._api.job_desc import current_scope as _current

    return _current()
