"""What `nn.Graph.debug(...)` and `repr(graph)` show of the ops a graph's `build` created (OneFlow 0.9
`nn/graph/util.py: operators_repr`, `graph.py`, `proxy.py`): one `(OPERATOR: ...)` line per op, under the module
whose scope created it, and each module call's `(INPUT: ...)` / `(OUTPUT: ...)` lines.

An op line is `(OPERATOR: <name>(<inputs>) -> (<outputs>), placement=(<placement>)[, location=(<stack>)])`, with
each input and output as `<producer op>/<blob>:(sbp=(B), size=(2, 6), dtype=(oneflow.float32))`; op names are
OneFlow's `<module path>-<op type>-<n>` (`JobBuildAndInferCtx::NewUniqueOpNameByFunctionalOpConf`: one counter per
graph, module path as the scope prefix), inputs `_<graph>_input.0.<i>_<node>` (the ArgsTree's node numbering).
The location, shown with `debug(op_repr_with_py_stack=True)`, is the Python stack that created the op as the
documentation page `basics/08_nn_graph.md` prints it: `File "f.py", line 11, in forward, source < ... >` per frame,
innermost first, at most `max_py_stack_depth` frames and `... N more`, frames of this package left out when
`only_user_py_stack` (OneFlow leaves out its own package's frames).
"""
import linecache
import os
import sys

from oneflow_compat.ir import sbp as S
from oneflow_compat._global.op_names import oneflow_op_type

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class DebugOptions:
    def __init__(self, max_py_stack_depth=2, only_user_py_stack=True, op_repr_with_py_stack=False):
        self.max_py_stack_depth = max_py_stack_depth
        self.only_user_py_stack = only_user_py_stack
        self.op_repr_with_py_stack = op_repr_with_py_stack


def _is_own(filename):
    """Frames of this package, and of the interpreter's frozen start-up modules (runpy, when the script runs
    under `python -m oneflow_compat`): a script run as `python script.py` has none of the latter."""
    return filename.startswith("<frozen ") or os.path.abspath(filename).startswith(_PACKAGE_DIR)


def python_location(max_depth, only_user):
    """The calling Python stack as OneFlow records it for an op (see the module docstring)."""
    frame = sys._getframe(1)
    shown, more = [], 0
    while frame is not None:
        code = frame.f_code
        if not (only_user and _is_own(code.co_filename)):
            if len(shown) < max_depth:
                source = linecache.getline(code.co_filename, frame.f_lineno).strip()
                shown.append('File "%s", line %d, in %s, source < %s >' % (code.co_filename, frame.f_lineno,
                                                                          code.co_name, source))
            else:
                more += 1
        frame = frame.f_back
    if more:
        shown.append("... %d more" % more)
    return "; ".join(shown)


class OpRecords:
    """The ops one graph's build created, in order, with what their lines show."""

    def __init__(self, graph_name, options):
        self.graph_name = graph_name
        self.options = options
        self.ops = []  # (scope path, name, op (ir Op), [input lbn], location)
        self.lbn = {}  # id(ir blob) -> its OneFlow logical blob name
        self.module_io = {}  # module path -> ([INPUT lines], [OUTPUT lines]) of its last call

    def name_blob(self, blob, lbn):
        self.lbn[id(blob)] = lbn

    def record(self, path, op_type, op, input_blobs):
        name = "%s%s-%d" % (path + "-" if path else "", oneflow_op_type(op_type), len(self.ops))
        ins = [self.lbn.get(id(b), b.op.name + "/out") for b in input_blobs]
        for i, y in enumerate(op.outputs):
            self.name_blob(y, "%s/out_%d" % (name, i))
        loc = python_location(self.options.max_py_stack_depth, self.options.only_user_py_stack)
        self.ops.append((path, name, op, ins, loc))

    def operator_lines(self, path, job, placement_text):
        """The OPERATOR lines of the ops created directly in module `path` ('' for the graph's own)."""
        by_name = {op.name: op for op in job.ops} if job is not None else {}
        lines = []
        for p, name, op, ins, loc in self.ops:
            if p != path:
                continue
            compiled = by_name.get(op.name, op)
            sbp_in = compiled.sbp_in or op.sbp_in or [S.B] * len(op.inputs)
            sbp_out = compiled.sbp_out or op.sbp_out or [S.B] * len(op.outputs)
            args = ", ".join("%s:(%s)" % (lbn, _blob_desc(b, s)) for lbn, b, s in zip(ins, op.inputs, sbp_in))
            outs = ", ".join("%s/out_%d:(%s)" % (name, i, _blob_desc(y, s))
                             for i, (y, s) in enumerate(zip(op.outputs, sbp_out)))
            text = "(OPERATOR: %s(%s) -> (%s), placement=(%s)" % (name, args, outs, placement_text(op.placement))
            if self.options.op_repr_with_py_stack and loc:
                text += ", location=(%s)" % loc
            lines.append(text + ")")
        return lines


def _blob_desc(blob, sbp):
    shape = ", ".join(str(d) for d in blob.meta.shape)
    return "sbp=(%r), size=(%s), dtype=(oneflow.%s)" % (sbp, shape, blob.meta.dtype.name)


def arg_names(prefix, args, kwargs):
    """OneFlow's ArgsTree names of the tensor leaves of (args, kwargs): `<prefix>.0.<i>_<node>` where nodes are
    numbered depth-first from the (args, kwargs) pair (0), args (1), their items, kwargs, its items."""
    names = []
    counter = [0]

    def walk(x, path):
        node = counter[0]
        counter[0] += 1
        if isinstance(x, (tuple, list)) and not hasattr(x, "_fields"):
            for i, v in enumerate(x):
                walk(v, path + ".%d" % i)
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(v, path + ".%s" % k)
        else:
            names.append((x, "%s_%d" % (path, node)))

    walk((tuple(args), dict(kwargs)), prefix)
    return names
