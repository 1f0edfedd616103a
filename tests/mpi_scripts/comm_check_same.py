"""`check_same` with differing lists: every rank must raise PlanMismatchError with the same message.

Rank 1 differs at op #2; with 4 ranks, rank 3 differs the same way and rank 2's list is one op short.
Each rank prints `rank <r> caught: <message>` (run with ONEFLOW_COMPAT_OUTPUT=all to see every rank).
"""
from oneflow_compat.comm import PlanMismatchError, get_process_comm

comm = get_process_comm()
ops = ["input-feed float32 (8, 4)", "dense1-matmul (8, 4)x(4, 3)", "dense1-bias_add", "loss-reduce_mean"]
if comm.rank in (1, 3):
    ops[2] = "dense1-relu"
if comm.rank == 2:
    ops = ops[:2]
comm.check_same(ops[:2], "prefix of job 'train_job'", item_kind="op")   # equal: must pass
try:
    comm.check_same(ops, "plan of job 'train_job'", item_kind="op")
except PlanMismatchError as error:
    print("rank %d caught: %s" % (comm.rank, error), flush=True)
else:
    raise SystemExit("rank %d: check_same did not raise" % comm.rank)
comm.barrier()
