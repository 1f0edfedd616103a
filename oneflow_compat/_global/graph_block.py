"""The graph's side of each module assigned to an `nn.Graph`: a `Block` (OneFlow 0.5–0.8; 0.9 calls it a proxy)
that reads through to the module, and its configuration — the pipeline stage in the three spellings
`block.config.stage_id = i` (0.5), `block.config.set_stage(i, placement)` (0.8) and
`block.to(flow.nn.graph.GraphModule).set_stage(stage_id=i, placement=P)` (0.9)."""
import collections

from oneflow_compat._global.modules import Module
from oneflow_compat._global.placement import placement as Placement


# --- per-module configuration --------------------------------------------------------------------------------
class BlockConfig:
    """What a graph knows of one module: its pipeline stage (and the placement a placed stage moves inputs to),
    and its activation checkpointing (None until set, as OneFlow 0.9: a module inside one that set it inherits it;
    passes/checkpointing.py recomputes its activations in the backward)."""

    def __init__(self):
        self._stage_id = None
        self._stage_placement = None
        self.activation_checkpointing = None

    @property
    def stage_id(self):
        return self._stage_id

    @stage_id.setter
    def stage_id(self, value):
        self.set_stage(value)

    @property
    def stage_placement(self):
        return self._stage_placement

    def set_stage(self, stage_id=None, placement=None):
        if stage_id is not None and (isinstance(stage_id, bool) or not isinstance(stage_id, int) or stage_id < 0):
            raise ValueError("stage_id must be a non-negative int, got %r" % (stage_id,))
        if placement is not None and not isinstance(placement, Placement):
            raise TypeError("set_stage: placement must be a flow.placement, got %r" % (placement,))
        self._stage_id = stage_id
        self._stage_placement = placement

    def __repr__(self):
        parts = []
        if self._stage_id is not None:
            parts.append("stage_id=%d" % self._stage_id)
        if self._stage_placement is not None:
            parts.append("placement=%r" % (self._stage_placement,))
        if self.activation_checkpointing:
            parts.append("activation_checkpointing=True")
        return ", ".join(parts)


class GraphModule:
    """`block.to(flow.nn.graph.GraphModule)` (OneFlow 0.9): the graph's side of one module."""

    def __init__(self, block):
        self._block = block

    @property
    def name(self):
        """The module's attribute name ("conv1"); `name_prefix` is the path of its parents ("m.layer."), as OneFlow
        0.9's GraphBlock.name / name_prefix (nn/graph/graph_block.py:57-63@v0.9.0)."""
        return self._block._name.rsplit(".", 1)[-1]

    @property
    def name_prefix(self):
        path = self._block._name
        return path[:len(path) - len(self.name)]

    @property
    def type(self):
        return "MODULE"  # GraphBlockType.MODULE (graph_block.py:30-35@v0.9.0)

    @property
    def stage_id(self):
        return self._block._config.stage_id

    @property
    def stage_placement(self):
        return self._block._config.stage_placement

    @stage_id.setter
    def stage_id(self, value):
        self._block._config.set_stage(value)

    def set_stage(self, stage_id=None, placement=None):
        self._block._config.set_stage(stage_id, placement)

    @property
    def activation_checkpointing(self):
        return self._block._config.activation_checkpointing

    @activation_checkpointing.setter
    def activation_checkpointing(self, value):
        self._block._config.activation_checkpointing = bool(value)

    def __repr__(self):
        return "GraphModule(%s%s)" % (self._block._name, (", " + repr(self._block._config)) if repr(self._block._config)
                                      else "")


class Block:
    """A module as an attribute of an `nn.Graph` (OneFlow 0.5–0.8's Block, 0.9's proxy): attribute reads go to
    the module (submodules come back as Blocks), calls run the module, `config` is the graph's configuration of
    this module."""

    def __init__(self, name, module, graph):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_graph", graph)
        object.__setattr__(self, "_config", BlockConfig())
        object.__setattr__(self, "_children", collections.OrderedDict())
        for child_name, child in module.named_children():
            self._children[child_name] = Block(name + "." + child_name, child, graph)

    @property
    def config(self):
        return self._config

    @property
    def name(self):
        return self._name

    def to(self, kind):
        """`to(flow.nn.graph.GraphModule)`: the graph's side of this module; `to(flow.nn.Module)`: the module."""
        if kind is GraphModule:
            return GraphModule(self)
        if isinstance(kind, type) and issubclass(kind, Module):
            return self._module
        raise TypeError("Block.to() takes flow.nn.graph.GraphModule or flow.nn.Module, got %r" % (kind,))

    def __call__(self, *args, **kwargs):
        return self._module(*args, **kwargs)

    # containers (Sequential, ModuleList): items that are modules come back as their Blocks
    def __getitem__(self, idx):
        item = self._module[idx]
        return self._block_of(item) if isinstance(item, Module) else item

    def __len__(self):
        return len(self._module)

    def __iter__(self):
        for item in self._module:
            yield self._block_of(item) if isinstance(item, Module) else item

    def _block_of(self, module):
        for child in self._children.values():
            if child._module is module:
                return child
        return module

    def __getattr__(self, name):
        children = self.__dict__.get("_children")
        if children is not None and name in children:
            return children[name]
        return getattr(self.__dict__["_module"], name)

    def __setattr__(self, name, value):
        setattr(self._module, name, value)

    def _blocks(self):
        yield self
        for child in self._children.values():
            yield from child._blocks()

    def _graph_module_line(self):
        """OneFlow 0.9's GraphModule._shallow_repr (graph_block.py v0.9.0): `(GraphModule:NAME(stage_id=S, ` and
        `activation_checkpointing=True, ` where set, then `))`."""
        cfg = self._config
        parts = ""
        if cfg.stage_id is not None:
            parts += "stage_id=%s, " % (cfg.stage_id,)
        if cfg.activation_checkpointing:
            parts += "activation_checkpointing=True, "
        return "(GraphModule:%s(%s))" % (self._name, parts)

    def __repr__(self):
        # OneFlow 0.9's ProxyModule.__repr__ (proxy.py v0.9.0): the head shows the module as its own first line
        # prints (Module._shallow_repr: its name and extra_repr), the last line is its GraphModule, with the ops
        # of the module's own scope once the graph is compiled
        head = "(MODULE:%s:%s)" % (self._name, self._module._shallow_repr())
        records = getattr(self._graph, "_op_records", None)
        inputs, outputs = records.module_io.get(self._name, ([], [])) if records is not None else ([], [])
        lines = list(inputs)
        for pname, p in self._module._parameters.items():
            if p is not None:
                lines.append("(PARAMETER:%s.%s:%s): ()" % (self._name, pname, tensor_text(p)))
        for bname, b in self._module._buffers.items():
            if b is not None:
                lines.append("(BUFFER:%s.%s:%s): ()" % (self._name, bname, tensor_text(b)))
        for child in self._children.values():
            lines.append(repr(child))
        lines.extend(outputs)
        ops = self._graph._operator_lines(self._name) if getattr(self._graph, "_compiled", None) is not None else []
        lines.append(self._graph_module_line()
                     + (": (\n" + "\n".join(indent(op, 2) for op in ops) + "\n)" if ops else ": ()"))
        return head + ": (\n" + "\n".join(indent(line, 2) for line in lines) + "\n)"


def tensor_text(t):
    parts = []
    if t.is_global:
        parts.append("placement=%r" % (t.placement,))
        parts.append("sbp=(%s)" % "".join("%r," % s for s in t.sbp))
    parts.append("size=%s" % (tuple(t.shape),))
    parts.append("dtype=oneflow.%s" % t.dtype.name)
    if t.requires_grad:
        parts.append("requires_grad=True")
    return "tensor(..., %s)" % ", ".join(parts)


def indent(text, n):
    return "\n".join(" " * n + line for line in text.split("\n"))
