"""`flow.serving` of OneFlow v0.4.0 (`oneflow/python/serving/inference_session.py`): refused — the inference
session loads OneFlow's saved-model protobufs into OneFlow's C++ runtime (`_api/refusals.py`)."""
from oneflow_compat._api.refusals import SAVED_MODEL, refused

InferenceSession = refused("serving.InferenceSession", SAVED_MODEL)
SessionOption = refused("serving.SessionOption", SAVED_MODEL)
ModelVersionPolicy = refused("serving.ModelVersionPolicy", SAVED_MODEL)
