"""`flow.saved_model` of OneFlow v0.4.0 (`oneflow/python/serving/saved_model_builder.py`): refused — a saved model
is OneFlow's Job protobuf, which oneflow_compat neither writes nor reads (`_api/refusals.py`)."""
from oneflow_compat._api.refusals import SAVED_MODEL, refused

ModelBuilder = refused("saved_model.ModelBuilder", SAVED_MODEL)
GraphBuilder = refused("saved_model.GraphBuilder", SAVED_MODEL)
SignatureBuilder = refused("saved_model.SignatureBuilder", SAVED_MODEL)
