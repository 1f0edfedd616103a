"""Issue 13: points where the project differed from OneFlow v0.3.4/v0.4.0, each checked against the rule in
OneFlow's source (file and function named at each test), and clear errors for custom C++ ops."""
import os

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp


# --- 1. flow.math.argmax(input, axis=-1, name=None) ------------------------------------------------------------
# OneFlow v0.3.4 / v0.4.0 oneflow/python/ops/math_ops.py `argmax`: the argmax op on the last axis; another axis is
# transposed to the end and back (int32 result, the axis removed; ties: the first index).
@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -2])
def test_argmax_along_any_axis(axis):
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    x[1, 2, :] = 7.0  # a tie along the last axis: the first index wins

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((3, 4, 5))) -> tp.Numpy:
        return flow.math.argmax(a, axis=axis)

    out = job(x)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.argmax(x, axis=axis))


def test_argmax_default_axis_and_positional_name():
    x = np.array([[1, 3, 8, 7, 2], [1, 9, 4, 3, 2]], np.float32)  # the docstring's example: [2 1]

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((2, 5))) -> tp.Numpy:
        return flow.math.argmax(a, 0, "am")

    @flow.global_function()
    def last(a: tp.Numpy.Placeholder((2, 5))) -> tp.Numpy:
        return flow.math.argmax(a)

    np.testing.assert_array_equal(job(x), [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(last(x), [2, 1])


def test_argmax_axis_out_of_range_asserts():
    # math_ops.py `argmax`: assert 0 <= axis < num_axes, "axis out of range"
    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((2, 5))) -> tp.Numpy:
        return flow.math.argmax(a, axis=2)

    with pytest.raises(AssertionError, match="axis out of range"):
        job(np.zeros((2, 5), np.float32))


# --- 2. layers.conv2d / batch_normalization: given variable names take the namespace prefix -------------------
# v0.3.4/v0.4.0 oneflow/python/ops/layers.py `conv2d`: without weight_name, get_variable("weight") inside
# namespace(name); with it, get_variable(weight_name) outside that block, so only the enclosing namespaces prefix
# it (flow.get_variable joins the namespace stack with "-": experimental/name_scope.py GetJobNameScopePrefix).
# v0.4.0 `_get_batch_normalization_variables` does the same with gamma_name/beta_name/moving_*_name.
def test_layer_variable_names_under_namespace():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3, 6, 6))) -> tp.Numpy:
        with flow.scope.namespace("ns"):
            y = flow.layers.conv2d(x, 4, 3, weight_name="wB", bias_name="bB", name="convA")
            y = flow.layers.conv2d(y, 4, 3, name="convB")
            y = flow.layers.batch_normalization(y, axis=1, gamma_name="g", beta_name="b", moving_mean_name="mm",
                                                moving_variance_name="mv", name="bn")
        return flow.layers.conv2d(y, 2, 1, weight_name="top_w", use_bias=False, name="convC")

    job(np.zeros((2, 3, 6, 6), np.float32))
    assert set(flow.get_all_variables()) == {"ns-wB", "ns-bB", "ns-convB-weight", "ns-convB-bias", "ns-g", "ns-b",
                                             "ns-mm", "ns-mv", "top_w"}


# --- 3. flow.nn.dropout(noise_shape=...) ------------------------------------------------------------------------
# v0.3.4/v0.4.0 oneflow/python/ops/nn_ops.py `random_mask_like` (called by `dropout` in train jobs with rate > 0):
#     assert 0, "noise_shape will be supported later."
# `dropout` returns x first when the job is not trainable or rate == 0, and checks `seed` needs `name` after that.
def _train_job_with_dropout(**kwargs):
    @flow.global_function(type="train")
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        w = flow.get_variable("w", (4, 3), initializer=flow.ones_initializer())
        y = flow.nn.dropout(x * w, 0.5, **kwargs)
        loss = flow.math.reduce_mean(y)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return y

    return job


def test_dropout_noise_shape_asserts_in_train_jobs():
    job = _train_job_with_dropout(noise_shape=[4, 1])
    with pytest.raises(AssertionError, match=r"^noise_shape will be supported later\.$"):
        job(np.ones((4, 3), np.float32))


def test_dropout_noise_shape_and_seed_are_not_checked_where_dropout_is_identity():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        return flow.nn.dropout(x, 0.5, noise_shape=[4, 1], seed=3)  # predict job: x itself, no name needed

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(job(x), x)


def test_dropout_seed_without_name_asserts_in_train_jobs():
    job = _train_job_with_dropout(seed=3)
    with pytest.raises(AssertionError):
        job(np.ones((4, 3), np.float32))


# --- 4. flow.nn.compat_conv2d ---------------------------------------------------------------------------------
# v0.3.4/v0.4.0 oneflow/python/ops/nn_ops.py `tf_conv2d` (exported as nn.compat_conv2d): padding "SAME" becomes
# "SAME_UPPER" (TensorFlow's rule: the odd padding cell at the end), then flow.nn.conv2d; flow.nn.conv2d's own
# "SAME" is "SAME_LOWER" (nn_ops.py calc_conv_padding).
def _conv_reference(x, w, stride, pad_top, pad_left, out_hw):
    xp = np.pad(x, ((0, 0), (0, 0), (pad_top, 8), (pad_left, 8)))
    n, _, _, _ = x.shape
    f, _, kh, kw = w.shape
    out = np.zeros((n, f) + out_hw, np.float64)
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,fchw->nf", patch, w)
    return out


@pytest.mark.parametrize("fn, lower", [("compat_conv2d", False), ("conv2d", True)])
def test_compat_conv2d_same_pads_like_tensorflow(fn, lower):
    r = np.random.default_rng(1)
    x = r.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = r.standard_normal((4, 3, 2, 2)).astype(np.float32)  # even kernel: SAME needs one padding cell per axis

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((2, 3, 6, 6)), b: tp.Numpy.Placeholder((4, 3, 2, 2))) -> tp.Numpy:
        return getattr(flow.nn, fn)(a, b, 1, "SAME")

    out = job(x, w)
    assert out.shape == (2, 4, 6, 6)
    before = 1 if lower else 0  # SAME_LOWER puts the cell before, SAME_UPPER (TensorFlow) after
    np.testing.assert_allclose(out, _conv_reference(x, w, 1, before, before, (6, 6)), rtol=1e-4, atol=1e-4)


def test_compat_conv2d_valid_and_explicit_padding_pass_through():
    r = np.random.default_rng(2)
    x = r.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w = r.standard_normal((3, 2, 3, 3)).astype(np.float32)

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((1, 2, 5, 5)), b: tp.Numpy.Placeholder((3, 2, 3, 3))) -> tp.Numpy:
        return flow.nn.compat_conv2d(a, b, 2, "VALID", name="c")

    np.testing.assert_allclose(job(x, w), _conv_reference(x, w, 2, 0, 0, (2, 2)), rtol=1e-4, atol=1e-4)


# --- 5. batch normalization's moving variance, per device ------------------------------------------------------
# v0.3.4/v0.4.0 oneflow/python/ops/layers.py `batch_normalization`: device tag "cpu" -> flow.nn.moments (population
# variance) and moving <- momentum*moving + (1-momentum)*variance; otherwise the `normalization` op, whose GPU kernel
# (oneflow/user/kernels/normalization_kernel.cu, NormalizationTrainKernel) calls cudnnBatchNormalizationForwardTraining
# with exponentialAverageFactor = 1 - momentum: cuDNN's running variance takes the unbiased n/(n-1) estimate.
# The output is normalized with the population variance on both.
def _bn_train_step(placement_tag=None, gpu_device_num=None, momentum=0.9):
    if gpu_device_num is not None:
        flow.config.gpu_device_num(gpu_device_num)
    x = np.random.default_rng(3).standard_normal((4, 3, 2, 5)).astype(np.float32) * 2 + 1

    @flow.global_function(type="train")
    def job(a: tp.Numpy.Placeholder((4, 3, 2, 5))) -> tp.Numpy:
        w = flow.get_variable("w", (1, 3, 1, 1), initializer=flow.ones_initializer())

        def body():
            y = flow.layers.batch_normalization(a * w, axis=1, momentum=momentum, name="bn")
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
                flow.math.reduce_mean(y))
            return y

        if placement_tag is None:
            return body()
        with flow.scope.placement(placement_tag, "0:0"):
            return body()

    y = job(x)
    v = {k: val.numpy() for k, val in flow.get_all_variables().items()}
    return x, y, v["bn-moving_mean"], v["bn-moving_variance"]


def _bn_expected(x, momentum, unbiased):
    mean = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    n = x.size // x.shape[1]
    y = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 0.001)
    moving_var = momentum * 1.0 + (1 - momentum) * (var * n / (n - 1) if unbiased else var)
    return y, (1 - momentum) * mean, moving_var


@pytest.mark.parametrize("placement_tag, gpu_device_num, unbiased", [
    ("cpu", None, False),  # OneFlow's CPU path: population variance
    ("gpu", None, True),  # the script asks for gpu: OneFlow's GPU (cuDNN) rule, also where it runs on CPU devices
    (None, 1, True),  # flow.config.gpu_device_num(1): the default placement asks for gpu
])
def test_batch_norm_moving_variance_per_device(placement_tag, gpu_device_num, unbiased):
    x, y, moving_mean, moving_var = _bn_train_step(placement_tag, gpu_device_num)
    y_ref, mean_ref, var_ref = _bn_expected(x.astype(np.float64), 0.9, unbiased)
    np.testing.assert_allclose(y, y_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(moving_mean, mean_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(moving_var, var_ref, rtol=1e-5)


def test_batch_norm_default_placement_follows_the_machine():
    # no device named: OneFlow's default placement is "gpu" on GPU builds and "cpu" on CPU-only builds
    from oneflow_compat.backend import devices

    x, _, _, moving_var = _bn_train_step()
    _, _, var_ref = _bn_expected(x.astype(np.float64), 0.9, unbiased=devices.cuda_usable())
    np.testing.assert_allclose(moving_var, var_ref, rtol=1e-5)


def test_batch_norm_gpu_rule_matches_torch_running_var():
    torch = pytest.importorskip("torch")
    x, _, moving_mean, moving_var = _bn_train_step("gpu")
    bn = torch.nn.BatchNorm2d(3, momentum=0.1, eps=0.001)  # torch's momentum is OneFlow's 1 - momentum
    bn.train()
    bn(torch.from_numpy(x))
    np.testing.assert_allclose(moving_mean, bn.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(moving_var, bn.running_var.numpy(), rtol=1e-5)


# --- 6. custom C++ ops are refused, naming the op; load_library of a missing file names the file ---------------
# OneFlow: flow.user_op_builder / consistent_user_op_builder (oneflow/python/ops/user_op_builder.py) add an op type
# registered in C++; flow.experimental.custom_op_module (ops/util/custom_op_module.py) compiles one with g++;
# flow.config.load_library (framework/config_util.py) dlopens a .so at session start (core/framework/
# load_library.cpp: "LoadLibrary ERROR! Cannot load library file: <path>").
def test_user_op_builder_is_refused_naming_the_op():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.user_op_builder("my_relu_op").Op("myrelu").Input("in", [x]).Output("out").Build() \
            .InferAndTryRun().RemoteBlobList()[0]

    with pytest.raises(NotImplementedError, match=r"my_relu_op.*'myrelu'.*OneFlow's C\+\+ runtime"):
        job(np.zeros((2, 3), np.float32))
    for builder in (flow.user_op_module_builder, flow.consistent_user_op_module_builder):
        with pytest.raises(NotImplementedError, match="MiniReader.*C\\+\\+ runtime"):
            builder("MiniReader")
    with pytest.raises(NotImplementedError, match="'x'.*C\\+\\+ runtime"):
        flow.consistent_user_op_builder("x").Input("in", [])


def test_custom_op_module_is_refused_naming_the_module():
    import oneflow_compat.experimental as experimental

    assert experimental.custom_op_module is flow.experimental.custom_op_module
    with pytest.raises(NotImplementedError, match="'user_relu'.*C\\+\\+ runtime"):
        flow.experimental.custom_op_module("user_relu", "/some/path")


def test_load_library_missing_file_names_it(tmp_path):
    missing = str(tmp_path / "final_relu.so")
    with pytest.raises(FileNotFoundError, match="Cannot load library file: .*final_relu.so"):
        flow.config.load_library(missing)
    with pytest.raises(FileNotFoundError, match="final_relu.so"):
        flow.config.load_library_now(missing)


def test_load_library_existing_file_is_refused_naming_it(tmp_path):
    lib = tmp_path / "final_relu.so"
    lib.write_bytes(b"\x7fELF")
    with pytest.raises(NotImplementedError, match=r"%s.*C\+\+ runtime" % os.path.basename(str(lib))):
        flow.config.load_library(str(lib))


def test_load_library_after_session_start_is_the_legacy_no_op(capsys, tmp_path):
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((1,))) -> tp.Numpy:
        return x

    job(np.zeros((1,), np.float32))
    capsys.readouterr()
    assert flow.config.load_library(str(tmp_path / "missing.so")) is False
    assert "Nothing happened because the session is running" in capsys.readouterr().out
