"""`flow.utils.global_view` on 3 ranks (tests/test_global_mpi.py runs it): a state dict of local pieces made
global on ranks [0, 1] with an SBP function (ranks 0 and 1 hold pieces, rank 2 holds None and takes the structure
from rank 0), moved to a module on another placement by load_state_dict, and back to local pieces; a global
state dict's to_global (no structure sent) and to_local. Every rank prints `OK <what>`; a failed check raises."""
import collections
import warnings

import numpy as np

import oneflow as flow

rank = flow.env.get_rank()
files = flow.placement("cpu", ranks=[0, 1])
B, S0, S1 = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)


def piece(shape, r):
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 100 * r


if rank in (0, 1):  # what each of ranks 0 and 1 would load from its own file
    local = collections.OrderedDict(
        [("stage", collections.OrderedDict([("weight", flow.tensor(piece((2, 3), rank))),
                                            ("bias", flow.tensor(piece((1, 3), rank)))])),
         ("step", flow.tensor(np.array([7], np.int64)))])
else:
    local = None


def choose(state, tensor):
    if tensor is state["step"]:
        return B
    if tensor is state["stage"]["bias"]:
        return S1
    return S0


with warnings.catch_warnings():
    warnings.simplefilter("error")  # tensors only: no warning
    state = flow.utils.global_view.to_global(local, placement=files, sbp=choose)
assert isinstance(state, collections.OrderedDict) and list(state) == ["stage", "step"], state
weight, bias, step = state["stage"]["weight"], state["stage"]["bias"], state["step"]
assert weight.placement == files and weight.sbp == (S0,) and tuple(weight.shape) == (4, 3)
assert bias.sbp == (S1,) and tuple(bias.shape) == (1, 6) and step.sbp == (B,) and tuple(step.shape) == (1,)
whole = weight.to_global(placement=flow.placement("cpu", ranks=[0, 1, 2]), sbp=B).to_local().numpy()
np.testing.assert_array_equal(whole, np.concatenate([piece((2, 3), 0), piece((2, 3), 1)]))
print("OK to_global of local pieces, rank 2 holding None", flush=True)

model = flow.nn.Linear(3, 4)
model.to_global(placement=flow.placement("cpu", ranks=[2]), sbp=B)
model.load_state_dict({"weight": weight, "bias": bias.to_global(sbp=B).reshape(6)[:4]})
if rank == 2:
    np.testing.assert_array_equal(model.weight.to_local().numpy(), whole)
print("OK load_state_dict onto another placement", flush=True)

pieces = flow.utils.global_view.to_local(state)
if rank in (0, 1):
    np.testing.assert_array_equal(pieces["stage"]["weight"].numpy(), piece((2, 3), rank))
    np.testing.assert_array_equal(pieces["stage"]["bias"].numpy(), piece((1, 3), rank))
    copied = flow.utils.global_view.to_local(weight, copy=True)
    copied[0, 0] = -1
    assert weight.to_local().numpy()[0, 0] == piece((2, 3), rank)[0, 0]
else:
    assert tuple(pieces["stage"]["weight"].shape) == (0, 0)
print("OK to_local", flush=True)

# a global input: every rank holds it, nothing is sent; (placement, sbp) may change one at a time
everywhere = flow.utils.global_view.to_global([weight, (bias, None)], sbp=B)
assert isinstance(everywhere, list) and isinstance(everywhere[1], tuple) and everywhere[1][1] is None
assert everywhere[0].sbp == (B,) and everywhere[0].placement == files
np.testing.assert_array_equal(everywhere[0].to_global(placement=flow.placement("cpu", ranks=[0, 1, 2])).to_local()
                              .numpy(), whole)
print("OK to_global of global tensors in a list", flush=True)
