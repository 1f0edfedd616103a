"""The recorded collective-boxing settings (see the package docstring), keyed by their resource.proto path."""
_SETTINGS = {}


def set_resource_attr(attrs_chain, value, type_):
    # OneFlow 0.9's check and words (python/oneflow/framework/config_util.py _set_resource_attr)
    assert isinstance(value, type_), ("Attribute " + repr(attrs_chain) + " type unmatched! Expected: " + str(type_)
                                      + " but get: " + str(type(value)))
    _SETTINGS[".".join(attrs_chain if isinstance(attrs_chain, list) else [attrs_chain])] = value


def settings():
    """The settings made so far: {"collective_boxing_conf.nccl_num_streams": 2, ...}."""
    return dict(_SETTINGS)
