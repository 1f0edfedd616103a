"""The version of this implementation (`flow.__version__`; OneFlow kept it in `oneflow/version.py` too).

It is oneflow_compat's own release number, not a OneFlow release: the package runs OneFlow's legacy API (v0.3-0.4)
and its global-tensor API (v0.5-0.9) side by side. `setup.cfg` reads it from here, so there is one source."""
__version__ = "0.1.0"

# the OneFlow releases whose APIs this package runs (for `oneflow-compat --version`)
ONEFLOW_APIS = (("legacy lazy API", "v0.3-v0.4"), ("global-tensor API", "v0.5-v0.9"))
