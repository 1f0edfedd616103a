"""The plan as a picture (`explain --svg/--png`, `flow.explain(job, to=FILE)`): every stage with its devices and ops,
every boxing with its collective and bytes, for a legacy job, an nn.Graph and an eager program."""
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.tools import plan_picture

pytest.importorskip("matplotlib")

BATCH, IN, HID, OUT = 8, 12, 6, 4


def _hybrid_job():
    """The hybrid example's shape: a hidden layer on the first device, a model-parallel output layer on two."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((BATCH, IN)),
                  y: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            h = flow.layers.dense(x, HID, activation=flow.nn.relu, name="hidden")
        logits = flow.layers.dense(h, OUT, name="out", model_distribute=flow.distribute.split(0))
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    return train_job


def _svg_texts(path):
    root = ET.parse(str(path)).getroot()
    return ["".join(t.itertext()) for t in root.iter() if t.tag.endswith("text")]


def _bytes_text(n):
    return "{:,} B".format(int(n)) if float(n).is_integer() else "{:,.1f} B".format(n)


@pytest.mark.cpu_only("asserts the text of CPU placements")
def test_legacy_job_picture_shows_every_stage_device_op_and_boxing(tmp_path):
    job = _hybrid_job()
    report = flow.explain(job, to=str(tmp_path / "plan.svg"))  # draws, and still returns the report
    assert report.boxing, "the hybrid job must box"
    texts = _svg_texts(tmp_path / "plan.svg")
    joined = "\n".join(texts)
    assert "job 'train_job' (train): %d ops, %d boxing" % (len(report.ops), len(report.boxing)) in texts
    assert "stage 0: cpu 0:0-1 (2 devices)" in texts and "stage 1: cpu 0:0 (1 device)" in texts
    assert "0:0" in texts and "0:1" in texts
    for op in report.ops:  # every op is listed under its stage (boxing ops are the arrows), with its output SBP
        if not op.boxing:
            sbp = ",".join(map(repr, op.sbp_out)) or "-"
            assert ("%s (%s) -> %s" % (op.name, op.type, sbp) in texts
                    or "%s -> %s" % (op.name, sbp) in texts), op.name  # (a long line drops the type)
    labels = [t for t in texts if re.search(r" \u00b7 (forward|backward|optimizer)$", t)]
    assert len(labels) == len(report.boxing) == sum(op.boxing for op in report.ops)
    for b, label in zip(report.boxing, labels):  # in plan order, each with its collective and bytes
        assert label == "%s %s %s \u00b7 %r -> %r \u00b7 %s, %s \u00b7 %s" % (
            b.blob, "x".join(map(str, b.shape)), b.dtype, b.src_sbp, b.dst_sbp, b.collective, _bytes_text(b.bytes),
            b.section)
    assert "total: %s per call" % _bytes_text(report.total_bytes()) in joined


def test_png_and_pdf_are_written_and_other_suffixes_refused(tmp_path):
    report = flow.explain(_hybrid_job())
    plan_picture.draw(report, tmp_path / "plan.png")
    data = (tmp_path / "plan.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width > 800 and height > 400
    plan_picture.draw(report, tmp_path / "plan.pdf")
    assert (tmp_path / "plan.pdf").read_bytes()[:5] == b"%PDF-"
    with pytest.raises(ValueError, match=r"plan\.gif: the file name must end in \.svg, \.png or \.pdf"):
        plan_picture.draw(report, tmp_path / "plan.gif")
    assert not (tmp_path / "plan.gif").exists()


@pytest.mark.cpu_only("asserts the text of CPU placements")
def test_a_job_without_boxing_says_so(tmp_path):
    flow.clear_default_session()

    @flow.global_function()
    def predict(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        return flow.math.relu(x)

    flow.explain(predict, to=str(tmp_path / "p.svg"))
    texts = _svg_texts(tmp_path / "p.svg")
    assert "(none: every op's inputs already lie as it needs them)" in texts
    assert "stage 0: cpu 0:0 (1 device)" in texts


def test_eager_program_picture_labels_each_transfer(tmp_path):
    # the rows an eager program on 4 ranks logs (runtime/global_eager.py): a pipeline move, a gradient all-reduce
    from oneflow_compat.ir import sbp as S
    from oneflow_compat.ir.placement import Placement
    from oneflow_compat.runtime.global_eager import BoxingRecord
    from oneflow_compat.tools.explain import EagerReport

    first, last, all4 = (Placement("cpu", [(r, 0) for r in ranks]) for ranks in ([0, 1], [2, 3], [0, 1, 2, 3]))
    report = EagerReport([
        (BoxingRecord("to_global", (8, 16), "float32", first, S.S(0), last, S.B, "send/recv", 256.0), 3),
        (BoxingRecord("gradient", (16, 16), "float32", all4, S.P, all4, S.B, "all-reduce", 1536.0), 3)])
    plan_picture.draw(report, tmp_path / "eager.svg")
    texts = _svg_texts(tmp_path / "eager.svg")
    assert texts[0] == "eager global ops: 2 boxing transfers"
    assert "placement 0: cpu ranks 0, 1 (2 ranks)" in texts and "placement 1: cpu ranks 2, 3 (2 ranks)" in texts
    assert "placement 2: cpu ranks 0, 1, 2, 3 (4 ranks)" in texts
    assert [t for t in texts if t.startswith("rank ")] == ["rank 0", "rank 1", "rank 2", "rank 3"]
    assert "to_global 8x16 float32, 3 calls \u00b7 S(0) -> B \u00b7 send/recv, 768 B \u00b7 eager" in texts
    assert "gradient 16x16 float32, 3 calls \u00b7 P -> B \u00b7 all-reduce, 4,608 B \u00b7 gradient" in texts


def test_missing_matplotlib_is_named_before_the_program_runs(tmp_path, monkeypatch, capsys):
    from oneflow_compat import __main__ as cli

    script = tmp_path / "prog.py"
    script.write_text("print('ran')\n")
    monkeypatch.setattr(plan_picture, "missing_library", lambda: "drawing the plan needs matplotlib, which is not "
                                                                "installed: pip install 'oneflow_compat[plot]'")
    assert cli.main(["explain", "--svg", str(tmp_path / "p.svg"), str(script)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "explain: drawing the plan needs matplotlib" in out.err
    assert not (tmp_path / "p.svg").exists()


SCRIPT = textwrap.dedent("""
    import numpy as np
    import oneflow as flow
    import oneflow.typing as tp
    flow.config.cpu_device_num(2)

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((8, 12)), y: tp.Numpy.Placeholder((8,), dtype=flow.int32)) -> tp.Numpy:
        logits = flow.layers.dense(x, 4, name="out", model_distribute=flow.distribute.split(0))
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    print("before the call")
    train_job(np.ones((8, 12), np.float32), np.zeros(8, np.int32))
    print("trained")
""")


def test_cli_writes_svg_and_png(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-m", "oneflow_compat", "explain", "--svg", "plan.svg", "--png", "plan.png",
                           str(script)], capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "trained" not in done.stdout and "job 'train_job' (train)" in done.stdout
    assert done.stdout.splitlines()[-2:] == ["explain: the plan's picture is in plan.svg",
                                            "explain: the plan's picture is in plan.png"]
    lines = done.stdout.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("boxing (bytes per call"))
    table = lines[heading + 2:]  # after the header row, up to the total line
    rows = table[:next(i for i, line in enumerate(table) if line.startswith("total: "))]
    texts = _svg_texts(tmp_path / "plan.svg")
    labels = [t for t in texts if re.search(r" \u00b7 (forward|backward|optimizer)$", t)]
    assert rows and len(labels) == len(rows)
    for row, label in zip(rows, labels):  # the same boxing, in the same order, with the same collective and bytes
        blob, collective, n = row.split()[0], row.split()[-4], int(row.split()[-3])
        assert label.startswith(blob + " ") and label.endswith("%s, %s \u00b7 %s" % (collective, _bytes_text(n),
                                                                                     row.split()[-1])), (row, label)
    assert (tmp_path / "plan.png").read_bytes()[:4] == b"\x89PNG"
