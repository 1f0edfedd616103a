"""What the model zoo's scripts need of the legacy surface beyond the ops: OneFlow's protobuf enum modules, the
`oneflow.python.framework.distribute` module path, op names under namespaces and generated op names as OneFlow makes
them (UniqueStr counts per prefix), `get_variable(parallel_distribution=...)`, v0.4.0's scope attributes, matmul of
a batched blob with a 2-D weight (GPT), `gather(batch_dims=2)` of BERT's masked-LM head, int32 labels of sigmoid
cross entropy (Wide & Deep), and OneFlow's point of failure for a decay schedule with no steps left (the CNN zoo's
default warmup on a short run)."""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.framework import session as sess
from oneflow_compat.optimizer import lr_scheduler, warmup
from cpu_reference import device_under_test


def test_protobuf_enum_modules():
    import oneflow.core.common.data_type_pb2 as data_type_util
    import oneflow.core.operator.op_conf_pb2 as op_conf_util

    # oneflow/core/common/data_type.proto and oneflow/core/operator/op_conf.proto at v0.4.0
    assert (data_type_util.kInvalidDataType, data_type_util.kChar, data_type_util.kFloat, data_type_util.kDouble,
            data_type_util.kInt8, data_type_util.kInt32, data_type_util.kInt64, data_type_util.kUInt8,
            data_type_util.kOFRecord, data_type_util.kFloat16, data_type_util.kTensorBuffer) == tuple(range(11))
    assert (op_conf_util.kNone, op_conf_util.kTanH, op_conf_util.kSigmoid, op_conf_util.kRelu) == (0, 1, 2, 3)
    assert op_conf_util.ActivationType.Name(3) == "kRelu" and op_conf_util.ActivationType.Value("kNone") == 0
    assert data_type_util.DataType.kInt32 == 5 and data_type_util.DataType.keys()[2] == "kFloat"
    with pytest.raises(ValueError, match="Enum DataType has no name defined for value 42"):
        data_type_util.DataType.Name(42)
    # the same numbers as the dtype objects carry into checkpoints
    for dt in (flow.float32, flow.float64, flow.int8, flow.int32, flow.int64, flow.uint8, flow.float16):
        assert data_type_util.DataType.Value(dt.enum_name) == dt.enum_value


def test_python_framework_distribute_module():
    import oneflow.python.framework.distribute as distribute_util

    assert distribute_util.split(1) is flow.distribute.split(1)
    assert distribute_util.broadcast() is flow.distribute.broadcast()
    assert distribute_util.DistributeMirroredStrategy is flow.scope.mirrored_view
    assert distribute_util.get_world_size() == 1 and distribute_util.get_rank() == 0


def _names(body):
    flow.clear_default_session()

    @flow.global_function()
    def names_job(x: tp.Numpy.Placeholder((2, 3))):
        return body(x)

    names_job(np.zeros((2, 3), np.float32))
    return [op.name for op in sess.default_session().jobs["names_job"].ops]


def test_op_names_take_the_namespace_prefix():
    def body(x):
        with flow.scope.namespace("branch1x1"):
            a = flow.math.relu(x, name="conv0")
            w = flow.get_variable("conv0-weight", shape=(3,), initializer=flow.zeros_initializer())
        with flow.scope.namespace("branch5x5"):
            with flow.scope.namespace("inner"):
                b = flow.math.relu(x, name="conv0")  # the same name in another namespace (InceptionV3 does this)
            c = flow.math.tanh(x)
        return a + b + c + w

    names = _names(body)
    assert "branch1x1-conv0" in names and "branch5x5-inner-conv0" in names
    assert "branch1x1-conv0-weight" in names  # a variable op keeps its variable's full name
    assert any(n.startswith("branch5x5-tanh_") for n in names)


def test_generated_names_count_per_prefix():
    def plain(x):
        return flow.math.relu(flow.math.tanh(x))

    def with_casts(x):
        x = flow.identity(flow.identity(x))  # ops of another kind before: they must not shift the names below
        return flow.math.relu(flow.math.tanh(x))

    picked = [[n for n in _names(body) if n.startswith(("relu_", "tanh_"))] for body in (plain, with_casts)]
    assert picked[0] == picked[1] == ["tanh_0", "relu_0"]


def test_get_variable_parallel_distribution():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def pd_job(x: tp.Numpy.Placeholder((4, 6))):
        with flow.scope.placement("cpu", "0:0-1"):
            none = flow.get_variable("none", shape=(6, 2), initializer=flow.ones_initializer(),
                                     parallel_distribution=[])
            split = flow.get_variable("split", shape=(6, 2), initializer=flow.ones_initializer(),
                                      parallel_distribution="S(0)")
            return flow.matmul(x, none) + flow.matmul(x, split)

    report = flow.explain(pd_job)
    assert report.op("split").sbp_out == [flow.sbp.split(0)] or str(report.op("split").sbp_out[0]) == "S(0)"
    np.testing.assert_allclose(pd_job(np.ones((4, 6), np.float32)).get().numpy(), np.full((4, 2), 12.0))
    flow.clear_default_session()

    @flow.global_function()
    def two_d_job(x: tp.Numpy.Placeholder((4, 6))):
        return flow.get_variable("w", shape=(6,), initializer=flow.ones_initializer(),
                                 parallel_distribution=["S(0)", "B"]) + x

    # two entries need a 2-D placement hierarchy (distribute.py on main, sbp2d's); the default one is flat
    with pytest.raises(ValueError, match="flow.get_variable\\('w'\\): parallel_distribution \\['S\\(0\\)', 'B'\\] "
                                         "has 2 entries, but the placement %s 0:0 has 1 dimension" % device_under_test()):
        two_d_job(np.ones((4, 6), np.float32))


def test_scope_config_v040_attributes():
    def body(x):
        with flow.experimental.scope.config(pipeline_stage_id_hint=1, quantization_aware_training=False):
            return flow.math.relu(x)

    assert "relu_0" in _names(body)
    with pytest.raises(AssertionError, match="unknown scope attribute 'pipeline_stage' \\(OneFlow v0.4.0 has "
                                             "checkpointing, pipeline_stage_id_hint"):
        flow.experimental.scope.config(pipeline_stage=1)


def test_batched_matmul_with_a_weight_and_its_gradients():
    torch = pytest.importorskip("torch")
    r = np.random.default_rng(0)
    x, w = r.standard_normal((5, 3, 4)).astype(np.float32), r.standard_normal((6, 4)).astype(np.float32)
    for devices in (1, 2):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)
        grads = {}

        @flow.global_function(type="train")
        def mm_job(a: tp.Numpy.Placeholder((5, 3, 4)), b: tp.Numpy.Placeholder((6, 4))) -> tp.Numpy:
            with flow.scope.placement("cpu", "0:0-%d" % (devices - 1)):
                a = a + flow.get_variable("zero_a", shape=(5, 3, 4), initializer=flow.zeros_initializer())
                b = b + flow.get_variable("zero_b", shape=(6, 4), initializer=flow.zeros_initializer())
                flow.watch_diff(a, lambda g: grads.__setitem__("a", g.numpy()))
                flow.watch_diff(b, lambda g: grads.__setitem__("b", g.numpy()))
                out = flow.matmul(a, b, transpose_b=True, alpha=0.5)
                loss = flow.math.reduce_sum(out * out)
                flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0])).minimize(loss)
                return out

        got = mm_job(x, w)
        xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
        want = 0.5 * xt @ wt.T
        (want * want).sum().backward()
        np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(grads["a"], xt.grad.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(grads["b"], wt.grad.numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="transpose_a is not supported when b \\(2-D\\) is broadcast"):
        flow.clear_default_session()

        @flow.global_function()
        def bad(a: tp.Numpy.Placeholder((5, 3, 4)), b: tp.Numpy.Placeholder((3, 6))):
            return flow.matmul(a, b, transpose_a=True)
        bad(x, np.zeros((3, 6), np.float32))


def test_gather_batch_dims_as_bert_masked_lm():
    r = np.random.default_rng(1)
    seq = r.standard_normal((4, 7, 5)).astype(np.float32)
    pos = r.integers(0, 7, (4, 3)).astype(np.int32)
    flow.clear_default_session()

    @flow.global_function()
    def gather_job(s: tp.Numpy.Placeholder((4, 7, 5)), p: tp.Numpy.Placeholder((4, 3), dtype=flow.int32)):
        return flow.gather(params=s, indices=p, axis=2, batch_dims=2)  # run_pretraining.py's _GatherIndexes

    got = gather_job(seq, pos).get().numpy()
    np.testing.assert_array_equal(got, np.stack([seq[i][pos[i]] for i in range(4)]))


def test_sigmoid_cross_entropy_int_labels():
    r = np.random.default_rng(2)
    logits = r.standard_normal((6, 1)).astype(np.float32) * 3
    labels = r.integers(0, 2, (6, 1)).astype(np.int32)
    flow.clear_default_session()

    @flow.global_function()
    def sce_job(x: tp.Numpy.Placeholder((6, 1)), y: tp.Numpy.Placeholder((6, 1), dtype=flow.int32)):
        return flow.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=x)

    z, x = labels.astype(np.float64), logits.astype(np.float64)
    want = -(z * np.log(1 / (1 + np.exp(-x))) + (1 - z) * np.log(1 - 1 / (1 + np.exp(-x))))
    np.testing.assert_allclose(sce_job(logits, labels).get().numpy(), want, rtol=1e-5, atol=1e-7)


def test_decay_steps_fail_where_oneflow_checks_them():
    # OneFlow-Benchmark's optimizer_util on a short run: CosineScheduler(steps = batches of num_epochs - of
    # warmup_epochs) < 0; OneFlow's kernel checks decay_batches > 0 only once the warmup is over
    f32 = np.float32
    s = lr_scheduler.CosineScheduler(base_lr=0.256, steps=-40, warmup=warmup.linear(50, 0))
    assert [s.lr_at(t) for t in (0, 25)] == [0.0, float(f32(f32(0.256) * 0.5))]
    with pytest.raises(AssertionError, match="CosineScheduler: decay steps must be > 0, got -40"):
        s.lr_at(50)
