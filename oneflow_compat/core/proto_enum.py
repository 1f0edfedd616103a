"""Protobuf-style enums in pure Python, for OneFlow's `oneflow.core.*_pb2` modules that scripts import for their
enum values (`data_type_pb2.kFloat`, `op_conf_pb2.kNone`, ...).

An `EnumType` behaves like protobuf's `EnumTypeWrapper` for what scripts do with it: `Name(number)`,
`Value(name)`, `keys()`, `values()`, `items()`, attribute access (`DataType.kFloat`), and the module also exports
each value at top level, as generated `_pb2` modules do. Values are plain ints, as in protobuf."""


class EnumType:
    def __init__(self, name, values):
        self._name = name
        self._values = dict(values)
        self._names = {}
        for k, v in self._values.items():
            self._names.setdefault(v, k)  # the first name of an aliased number, as protobuf
        self.DESCRIPTOR = self  # scripts sometimes read `.DESCRIPTOR.name`

    @property
    def name(self):
        return self._name

    def Name(self, number):  # noqa: N802 - protobuf's name
        try:
            return self._names[number]
        except (KeyError, TypeError):
            raise ValueError("Enum %s has no name defined for value %r" % (self._name, number)) from None

    def Value(self, name):  # noqa: N802 - protobuf's name
        try:
            return self._values[name]
        except (KeyError, TypeError):
            raise ValueError("Enum %s has no value defined for name %r" % (self._name, name)) from None

    def keys(self):
        return list(self._values)

    def values(self):
        return list(self._values.values())

    def items(self):
        return list(self._values.items())

    def __getattr__(self, name):
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        raise AttributeError("Enum %s has no value %r" % (self.__dict__.get("_name"), name))

    def __repr__(self):
        return "<enum %s>" % self._name


def export(module_globals, enum):
    """Puts `enum` and each of its values into a module's namespace (as a generated _pb2 module does)."""
    module_globals[enum.name] = enum
    for k, v in enum.items():
        module_globals[k] = v
    return enum
