"""`oneflow.compatible`: OneFlow 0.5's home of the legacy API, `oneflow.compatible.single_client`.

Only an import loads it (`import oneflow.compatible.single_client as flow`), because loading it chooses the legacy
API for the process (framework/client_mode.py); an attribute access alone says how.
"""


def __getattr__(name):
    if name == "single_client":
        raise AttributeError("oneflow.compatible.single_client is loaded by importing it: `import "
                             "oneflow.compatible.single_client as flow` (it chooses the legacy job-function API "
                             "for this process)")
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
