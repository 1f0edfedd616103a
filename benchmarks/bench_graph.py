"""nn.Graph measurements, in one run (this script launches the venv's mpiexec itself for the 2-rank part):

1. pipelining: a 2-stage graph (stages on ranks 0 and 1, gradient accumulation 4) with stage ids — the GPipe
   schedule, stages overlapping micro-batches — vs the same graph without stage ids (micro-batch after
   micro-batch through both stages), on 2 ranks;
2. graph vs eager: seed 004's training step (the docs' MNIST MLP, batch 16, SGD) as an nn.Graph vs the same step
   run eagerly, on 1 rank (target: graph <= 0.8x eager).

Each comparison is timed A B A B … in one process (the same warm state for both) and reported as medians with
their ranges (min-max) over the rounds; the ratio is the one to read (absolute times on a shared machine are noise).

    python benchmarks/bench_graph.py [--rounds 7] [--steps 5]"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


def _alternate(fns, rounds, steps):
    """Runs each fn `steps` times per round, the fns in turn (A B A B …); per fn: seconds per step of each round."""
    times = [[] for _ in fns]
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            started = time.perf_counter()
            for _ in range(steps):
                fn()
            times[k].append((time.perf_counter() - started) / steps)
    return times


def _summary(samples):
    import numpy as np

    return {"median": float(np.median(samples)), "min": float(min(samples)), "max": float(max(samples))}


# --- 1. pipelining on 2 ranks ---------------------------------------------------------------------------------
def worker_pipeline(rounds, steps):
    import oneflow_compat as flow
    from oneflow_compat import nn
    from oneflow_compat.comm import world

    width, batch, acc = 1024, 64, 4
    p0, p1 = flow.placement("cpu", ranks=[0]), flow.placement("cpu", ranks=[1])
    b = flow.sbp.broadcast

    def stage(n_out=None):
        layers = [nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU()]
        if n_out:
            layers.append(nn.Linear(width, n_out))
        return nn.Sequential(*layers)

    class TwoStages(nn.Module):
        def __init__(self):
            super().__init__()
            self.s0 = stage().to_global(p0, b)
            self.s1 = stage(10).to_global(p1, b)

        def forward(self, x):
            return self.s1(self.s0(x).to_global(placement=p1, sbp=b))

    def graph(staged):
        flow.manual_seed(0)
        model = TwoStages()
        sgd = flow.optim.SGD(model.parameters(), lr=0.01)

        class Train(nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = model
                if staged:
                    self.model.s0.config.stage_id = 0
                    self.model.s1.config.stage_id = 1
                self.loss_fn = nn.CrossEntropyLoss()
                self.config.set_gradient_accumulation_steps(acc)
                self.add_optimizer(sgd)

            def build(self, x, y):
                loss = self.loss_fn(self.model(x), y)
                loss.backward()
                return loss

        return Train()

    x = flow.randn(batch, width).to_global(p0, b)
    y = flow.randint(0, 10, (batch,)).to_global(p1, b)
    pipelined, sequential = graph(True), graph(False)
    pipelined(x, y), sequential(x, y)  # compile both
    assert pipelined._compiled.pipelined and not sequential._compiled.pipelined
    comm = world.get_process_comm()

    def step(g):
        def run():
            g(x, y)
            comm.barrier()  # a step ends when both ranks are done
        return run

    times = _alternate([step(pipelined), step(sequential)], rounds, steps)
    if comm.rank == 0:
        print("RESULT " + json.dumps({"pipelined": _summary(times[0]), "sequential": _summary(times[1]),
                                      "micro_batches": acc, "batch": batch, "width": width}))


# --- 2. graph vs eager on 1 rank ------------------------------------------------------------------------------
def graph_vs_eager(rounds, steps):
    import oneflow_compat as flow
    from oneflow_compat import nn
    from oneflow_compat.tools.data_parallel_mlp import TrainGraph

    def model():
        flow.manual_seed(0)
        return nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                             nn.Linear(512, 10), nn.ReLU())

    x, y = flow.randn(16, 1, 28, 28), flow.randint(0, 10, (16,))
    eager_model = model()
    eager_opt = flow.optim.SGD(eager_model.parameters(), lr=0.001)
    loss_fn = nn.CrossEntropyLoss()

    def eager_step():
        loss = loss_fn(eager_model(x), y)
        loss.backward()
        eager_opt.step()
        eager_opt.zero_grad()

    graph_model = model()
    graph_opt = flow.optim.SGD(graph_model.parameters(), lr=0.001)

    graph = TrainGraph(graph_model, graph_opt, loss_fn)
    eager_step()
    graph(x, y)  # warm: eager plans cached, the graph compiled
    times = _alternate([lambda: graph(x, y), eager_step], rounds, steps)
    return {"graph": _summary(times[0]), "eager": _summary(times[1])}


def launch(ranks, *args):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    p = subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable, "-m", "mpi4py", os.path.abspath(__file__)]
                       + list(args), capture_output=True, text=True, env=env, timeout=900)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(p.stdout + p.stderr)


def _ms(s):
    return "%.2f ms [%.2f-%.2f]" % (s["median"] * 1e3, s["min"] * 1e3, s["max"] * 1e3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--worker", default=None)
    args = ap.parse_args()
    if args.worker == "pipeline":
        worker_pipeline(args.rounds, args.steps)
        return
    pipe = launch(2, "--worker", "pipeline", "--rounds", str(args.rounds), "--steps", str(args.steps))
    print("2 ranks, 2 stages, batch %d in %d micro-batches, width %d (per step; median [min-max] over %d rounds)"
          % (pipe["batch"], pipe["micro_batches"], pipe["width"], args.rounds))
    print("  pipelined (GPipe, stage ids)    %s" % _ms(pipe["pipelined"]))
    print("  sequential (no stage ids)       %s" % _ms(pipe["sequential"]))
    print("  pipelined / sequential          %.2fx" % (pipe["pipelined"]["median"] / pipe["sequential"]["median"]))
    one = graph_vs_eager(args.rounds, args.steps * 4)
    print("1 rank, seed 004's MLP training step, batch 16 (median [min-max] over %d rounds)" % args.rounds)
    print("  nn.Graph                        %s" % _ms(one["graph"]))
    print("  eager                           %s" % _ms(one["eager"]))
    print("  graph / eager                   %.2fx (target <= 0.8x)" % (one["graph"]["median"]
                                                                        / one["eager"]["median"]))


if __name__ == "__main__":
    main()
