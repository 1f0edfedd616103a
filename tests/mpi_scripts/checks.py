"""What the MPI check scripts beside this file share: each check that passes prints `CHECK <name> ok` (the test
counts them), `diverges` asserts an AgreementError naming both sides, and `done()` prints `DONE <count>` last."""
from oneflow_compat.runtime import global_eager
from oneflow_compat.runtime.agreement import AgreementError

passed = []


def ok(name):
    passed.append(name)
    print("CHECK %s ok" % name, flush=True)


def diverges(name, per_rank, *fragments):
    """`per_rank[this rank]()` must raise AgreementError whose message holds every fragment; returns the message."""
    rank = global_eager.rank()
    try:
        per_rank[rank]()
    except AgreementError as e:
        text = str(e)
        missing = [f for f in fragments if f not in text]
        if missing:
            raise AssertionError("%s: the message lacks %r: %s" % (name, missing, text))
        ok(name)
        return text
    raise AssertionError("%s: rank %d ran on without an AgreementError" % (name, rank))


def done():
    print("DONE %d" % len(passed), flush=True)
