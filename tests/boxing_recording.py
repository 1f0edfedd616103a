"""What tests/test_boxing_bytes.py and tests/test_boxing_nd.py share: boxing moves run on ranks simulated in one
process (`comm/simulated.py`), each rank's comm wrapped in a recording comm (`comm/recording.py`), and the boxing
`explain` reports for the same move compiled into a job."""
from oneflow_compat.comm.recording import RecordingComm
from oneflow_compat.comm.simulated import SimulatedWorld
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ir.graph import Job, TensorMeta
from oneflow_compat.ops import registry
from oneflow_compat.passes import boxing as boxing_pass
from oneflow_compat.passes import sbp_infer
from oneflow_compat.runtime import boxing
from oneflow_compat.runtime.runtime import Runtime
from oneflow_compat.tools import explain as explain_mod


class _Site:
    runtime, root_seed = None, None


def explained(move, meta):
    """`explain`'s report of a job that moves an input of `meta` as `move` does (`transitions.Move`: src_pl, src,
    dst_pl, dst): its one boxing or none."""
    src_pl, src, dst_pl, dst = move.src_pl, move.src, move.dst_pl, move.dst
    job = Job("to_global", "predict", None)
    job.default_placement = dst_pl
    ctx = builder.BuildContext(job, _Site(), src_pl, "consistent")
    with builder.Scoped(ctx):
        x = registry.new_op("input", [], {"shape": meta.shape, "dtype": meta.dtype, "kind": "numpy",
                                          "batch_axis": None, "sbp": src}, name="in0",
                            out_hints={0: src}).outputs[0]
        ctx.placements.append(dst_pl)
        registry.new_op("identity", [x], {}, name="to_global", in_hints={0: dst}, out_hints={0: dst})
    sbp_infer.infer(job, exact_first=True)
    boxing_pass.insert(job)
    report = explain_mod.report_of_job(job)
    assert len(report.boxing) <= 1
    return report


def run_moves(world_size, cases, timeout=20):
    """Every case (move: a `transitions.Move` or (src placement, src sbp, dst placement, dst sbp); logical value;
    source pieces by device) run by the boxing executors on `world_size` simulated ranks; returns per case ({dst device: piece} over all ranks,
    {rank: [the calls its recording comm recorded]})."""
    world = SimulatedWorld(world_size, timeout=timeout)
    comms = [RecordingComm(c) for c in world.comms]

    def rank_main(comm):
        rt = Runtime(comm, comm.rank)
        out = []
        for move, logical, pieces in cases:
            a, s, b, d = move if isinstance(move, tuple) else (move.src_pl, move.src, move.dst_pl, move.dst)
            comm.reset()
            meta = TensorMeta(logical.shape, dtypes.from_numpy(logical.dtype))
            fn = boxing.executor(rt, {"src_placement": a, "src_sbp": s, "dst_placement": b, "dst_sbp": d}, meta)
            got = fn(*[pieces[i] for i in rt.local_indices(a)])
            idx = rt.local_indices(b)
            assert len(got) == len(idx), "%s -> %s: %d pieces for devices %s" % (s, d, len(got), idx)
            out.append((dict(zip(idx, got)), list(comm.calls)))
        return out

    per_rank = world.run(rank_main, comms)
    return [({i: p for r in range(world_size) for i, p in per_rank[r][k][0].items()},
             {r: per_rank[r][k][1] for r in range(world_size)}) for k in range(len(cases))]
