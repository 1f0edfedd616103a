"""`flow.Model` / `flow.model.*` (OneFlow v0.4.0 `oneflow/python/framework/model.py`): the module style (OneFlow's own
test_model.py, eager) and the deprecated function style (legacy job functions), each against numpy."""
import os

import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp


def test_module_style_model_as_oneflows_test(tmp_path):
    # OneFlow v0.4.0 oneflow/python/test/ops/test_model.py
    model_dir_path = str(tmp_path / "ck")
    para = np.random.default_rng(0).standard_normal((2, 3))
    in_data = np.full((2, 3), 1)
    seen = {"train": 0, "val": 0}

    class CustomModule(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = flow.nn.Parameter(flow.Tensor(para))

        def forward(self, x):
            return x + self.w

    class EagerModel(flow.Model):
        def __init__(self):
            super().__init__()
            self.m = CustomModule()

        def forward(self, x):
            return self.m(x)

        def training_step(self, batch, **kwargs):
            return (flow.sum(self(batch)), list(self.m.parameters())[0])

        def configure_optimizers(self):
            return flow.optim.SGD([{"params": list(self.m.parameters()), "lr": 1.0, "momentum": 0.0}])

        def validation_step(self, batch):
            return self(batch)

    class TrainData(flow.model.DataModule):
        def forward(self, step_idx=0, optimizer_idx=0):
            return flow.ones((2, 3))

    class ValData(flow.model.DataModule):
        def forward(self, step_idx=0, optimizer_idx=0):
            return flow.ones((2, 3))

    class OutputMonitor(flow.model.Callback):
        def on_training_step_end(self, step_idx, outputs, optimizer_idx):
            nonlocal para
            loss = outputs[0].numpy()
            assert np.allclose(loss, np.sum(in_data + para), 1e-4, 1e-4)
            para -= 1
            assert np.allclose(outputs[1].numpy(), para, 1e-4, 1e-4)
            seen["train"] += 1

        def on_validation_step_end(self, step_idx, outputs):
            assert np.allclose(outputs.numpy(), in_data + para, 1e-4, 1e-4)
            seen["val"] += 1

    train_config = flow.model.TrainingConfig()
    train_config.config_data(TrainData())
    val_config = flow.model.ValidationConfig()
    val_config.config_data(ValData())
    val_config.config_step_interval(1)
    ck_config = flow.model.CheckpointConfig()
    ck_config.config_save(dirpath=model_dir_path, step_interval=5)

    eager_md = EagerModel()
    eager_md.fit(training_config=train_config, validation_config=val_config, checkpoint_config=ck_config,
                 callbacks=OutputMonitor(), max_steps=10)
    assert seen == {"train": 10, "val": 10}
    step_9_para = list(eager_md.parameters())[0][0].numpy()
    eager_md_load = EagerModel()
    eager_md_load.load_state_dict(flow.load(model_dir_path + "-4"))
    loaded_step_4_para = list(eager_md_load.parameters())[0][0].numpy()
    assert np.allclose(step_9_para, loaded_step_4_para - 5, 1e-4, 1e-4)
    assert os.path.isdir(model_dir_path + "-9")


def test_function_style_model_trains_validates_and_checkpoints(tmp_path, capsys):
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(6)]
    w_true = np.array([[1.0], [-2.0], [0.5]], np.float32)

    class Regression(flow.model.Model):
        def forward(self, x):
            w = flow.get_variable("w", shape=(3, 1), initializer=flow.zeros_initializer())
            return flow.matmul(x, w)

        def training_step(self, batch, optimizer_idx=0):
            x, y = batch
            return flow.math.reduce_mean(flow.math.square(self(x) - y))

        def validation_step(self, batch):
            x, y = batch
            return self(x)

        def configure_optimizers(self):
            return flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0)

    class Data(flow.model.NumpyDataModule):
        def forward(self, step_idx=0, optimizer_idx=0):
            x = xs[step_idx % len(xs)]
            return (x, x @ w_true)

    losses, preds = [], []

    class Monitor(flow.model.Callback):
        def on_training_step_end(self, outputs, step_idx=0, optimizer_idx=0):
            losses.append(outputs.numpy().item())

        def on_validation_step_end(self, outputs, step_idx=0):
            preds.append((step_idx, np.array(outputs)))

    train = flow.model.TrainingConfig()
    train.config_data(Data())
    val = flow.model.ValidationConfig()
    val.config_data(Data())
    val.config_step_interval(3)
    ck = flow.model.CheckpointConfig()
    ck.config_save(dirpath=str(tmp_path / "fn"), step_interval=3)
    Regression(is_deprecated_function_style=True).fit(train, val, ck, [Monitor()], max_steps=6)

    # numpy reference: plain gradient descent on the mean squared error, the batch of step k being xs[k]
    w = np.zeros((3, 1))
    want = []
    for k in range(6):
        x = xs[k].astype(np.float64)
        err = x @ w - x @ w_true
        want.append(float(np.mean(err ** 2)))
        w -= 0.1 * 2 * x.T @ err / err.size
        if k == 2:
            w_after_3 = w.copy()
    np.testing.assert_allclose(losses, want, rtol=1e-4)
    # validation after steps 2 and 5 (step_interval 3) runs on the batches of those steps
    assert [k for k, _ in preds] == [2, 5]
    np.testing.assert_allclose(preds[0][1], xs[2] @ w_after_3, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(preds[1][1], xs[5] @ w, rtol=1e-4, atol=1e-5)
    saved = flow.checkpoint.get(str(tmp_path / "fn-2"))
    np.testing.assert_allclose(saved["w"].numpy(), w_after_3, rtol=1e-4, atol=1e-6)
    assert os.path.isdir(str(tmp_path / "fn-5"))


def test_model_without_valid_configuration_says_so(capsys):
    class Empty(flow.model.Model):
        pass

    Empty().fit(max_steps=1)
    assert "fit() will do nothing because there has no valid configuration" in capsys.readouterr().out
    cfg = flow.model.ValidationConfig()
    cfg.config_step_interval(0)
    assert not cfg.check_valid() and "model.ValidationConfig data is None;" in cfg.error_msg \
        and "step_interval is <= 0" in cfg.error_msg
    assert isinstance(flow.model.TrainingConfig().exe_cfg, flow.ExecutionConfig)
    _ = tp
