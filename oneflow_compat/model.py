"""`flow.Model` / `flow.model.*`: OneFlow v0.4.0's high-level training loop (`oneflow/python/framework/model.py`).

A subclass of `flow.model.Model` defines `training_step`, `validation_step` and `configure_optimizers`; `fit`
runs `max_steps` steps of training, validation every `step_interval` steps and checkpoints every
`save_step_interval` steps (to `<dirpath>-<step>`), calling the callbacks after each training and validation
step. Two styles, as in OneFlow:

* `Model(is_deprecated_function_style=True)`: the steps are traced into legacy job functions (a "train" job per
  optimizer of `flow.optimizer`, a "predict" job for validation); with a `NumpyDataModule` the jobs take the
  batch's arrays as `tp.Numpy` placeholders inferred from the first batch, else `data(0, optimizer_idx)` builds
  the batch inside the job (a data-loader op). Checkpoints are the legacy variables (`flow.checkpoint`).
* the default, module style: the model is a `flow.nn.Module` run eagerly — `loss.backward()`, `opt.step()`,
  `opt.zero_grad()` with `flow.optim` optimizers; checkpoints are its `state_dict()` (`flow.save` / `flow.load`).

Messages and checks follow OneFlow's.
"""
import inspect
from abc import ABC

import numpy as np

from oneflow_compat import checkpoint as _checkpoint
from oneflow_compat._global import modules as _modules
from oneflow_compat.framework import annotations as _tp
from oneflow_compat.framework import client_mode
from oneflow_compat.framework.function_config import FunctionConfig as ExecutionConfig
from oneflow_compat.framework.job_function import global_function as _global_function
from oneflow_compat.ir import dtypes as _dtypes

__all__ = ["DataModule", "NumpyDataModule", "TrainingConfig", "ValidationConfig", "CheckpointConfig", "Callback",
           "Model"]


class DataModule(_modules.Module):
    """A batch source: `data(step_idx, optimizer_idx)` gives the step's batch. It serves either style (a function-
    style model's data module uses no global tensor), so creating one chooses neither API."""

    def __init__(self, *args, **kwargs):
        with client_mode.neutral():
            super().__init__()

    def forward(self, step_idx=0, optimizer_idx=0):
        pass

    def infer_oneflow_data_placeholder(self, batch=None, optimizer_idx=0):
        return None


class NumpyDataModule(DataModule):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, step_idx=0, optimizer_idx=0):
        pass

    def __call__(self, *args):
        return self.forward(*args)

    def infer_oneflow_data_placeholder(self, batch=None, optimizer_idx=0):
        assert isinstance(batch, tuple), "model.NumpyDataModule must return a tuple."
        placeholders = []
        for item in batch:
            assert isinstance(item, np.ndarray), "model.NumpyDataModule must return a tuple of numpy."
            placeholders.append(_tp.Numpy.Placeholder(shape=item.shape, dtype=_dtypes.from_numpy(item.dtype)))
        return placeholders


class TrainingConfig:
    def __init__(self):
        super().__init__()
        self.exe_cfg = ExecutionConfig()
        self.data = None
        self.error_msg = ""

    def config_execution(self, exe_cfg=None):
        self.exe_cfg = exe_cfg

    def config_data(self, data=None):
        self.data = data

    def check_valid(self):
        is_valid = True
        self.error_msg = ""
        if not isinstance(self.exe_cfg, ExecutionConfig):
            self.error_msg += "model.TrainingConfig exe_cfg is not ExecutionConfig;"
            is_valid = False
        if self.data is None:
            self.error_msg += "model.TrainingConfig data is None;"
            is_valid = False
        if not isinstance(self.data, DataModule):
            self.error_msg += "model.TrainingConfig data is not DataModule;"
            is_valid = False
        return is_valid


class ValidationConfig:
    def __init__(self):
        super().__init__()
        self.exe_cfg = ExecutionConfig()
        self.data = None
        self.step_interval = 10
        self.error_msg = ""

    def config_execution(self, exe_cfg=None):
        self.exe_cfg = exe_cfg

    def config_data(self, data=None):
        self.data = data

    def config_step_interval(self, step_interval=1):
        self.step_interval = step_interval

    def check_valid(self):
        is_valid = True
        self.error_msg = ""
        if self.data is None:
            self.error_msg += "model.ValidationConfig data is None;"
            is_valid = False
        if not isinstance(self.data, DataModule):
            self.error_msg += "model.ValidationConfig data is not DataModule;"
            is_valid = False
        if not isinstance(self.step_interval, int) or self.step_interval <= 0:
            self.error_msg += "model.ValidationConfig step_interval is <= 0 or is not int;"
            is_valid = False
        return is_valid


class CheckpointConfig:
    def __init__(self):
        self.need_load = False
        self.load_dirpath = None
        self.need_save = False
        self.save_dirpath = None
        self.save_step_interval = 1
        self.error_msg = ""

    def config_load(self, dirpath=None):
        self.need_load = True
        assert dirpath is not None, "dirpath should not be None"
        self.load_dirpath = dirpath

    def config_save(self, dirpath=None, step_interval=1):
        self.need_save = True
        self.save_dirpath = dirpath
        assert dirpath is not None, "dirpath should not be None"
        self.save_step_interval = step_interval
        assert step_interval > 0, "step_interval should not <= 0"
        assert isinstance(step_interval, int), "step_interval should be int"

    def check_valid(self):
        self.error_msg = ""
        return True


class Callback(ABC):
    """Abstract base class used to build new callbacks."""

    def on_training_step_end(self, outputs, step_idx=0, optimizer_idx=0):
        pass

    def on_validation_step_end(self, outputs, step_idx=0):
        pass


class Model(ABC, _modules.Module):
    """A high level API for model training and validation."""

    def __init__(self, *args, **kwargs):
        functional = kwargs.get("is_deprecated_function_style", False)
        if functional:  # its steps trace legacy job functions: the model itself uses no global-tensor API
            with client_mode.neutral():
                super().__init__()
        else:
            super().__init__()
        self._is_deprecated_function_style = functional

    def forward(self, *args, **kwargs):
        raise NotImplementedError

    def training_step(self, *args, **kwargs):
        raise NotImplementedError()

    def validation_step(self, *args, **kwargs):
        raise NotImplementedError()

    def configure_optimizers(self):
        raise NotImplementedError()

    def fit(self, training_config=None, validation_config=None, checkpoint_config=None, callbacks=None,
            max_steps=100):
        """Runs the full training and validation routine."""
        from oneflow_compat.framework import session as _session

        self._max_steps = max_steps
        _session.clear_default_session()
        self._sub_models = self._get_and_check_sub_models(training_config, validation_config, checkpoint_config,
                                                          callbacks)
        if len(self._sub_models) == 0:
            return
        if self._checkpoint_model.is_valid:
            self._checkpoint_model.load()
        for step_idx in range(0, self._max_steps):
            for sub_model in self._sub_models:
                try:
                    sub_model.step(step_idx)
                except Exception:
                    print("Model step_idx {} {} failed.".format(step_idx, sub_model.name))
                    raise

    def method_overrided(self, method_name=None):
        return getattr(self.__class__, method_name) != getattr(Model, method_name)

    def _get_and_check_sub_models(self, training_config=None, validation_config=None, checkpoint_config=None,
                                  callbacks=None):
        functional = self._is_deprecated_function_style
        sub_models = []
        self._train_model = (_TrainModel if functional else _TrainModelOOPStyle)(training_config, self, callbacks)
        if self._train_model.is_valid:
            sub_models.append(self._train_model)
        elif training_config is not None:
            print(self._train_model.error_msg, "{}'s fit() will not do training.".format(self.__class__.__name__))
        self._val_model = (_ValidateModel if functional else _ValidateModelOOPStyle)(validation_config, self,
                                                                                     callbacks)
        if self._val_model.is_valid:
            sub_models.append(self._val_model)
        elif validation_config is not None:
            print(self._val_model.error_msg, "{}'s fit() will not do validation.".format(self.__class__.__name__))
        if len(sub_models) == 0:
            print("{}'s fit() will do nothing because there has no valid configuration.".format(
                self.__class__.__name__))
            return sub_models
        self._checkpoint_model = (_CheckpointModel if functional else _CheckpointModelOOPStyle)(
            checkpoint_config, self, callbacks)
        if self._checkpoint_model.is_valid:
            sub_models.append(self._checkpoint_model)
        elif checkpoint_config is not None:
            print(self._checkpoint_model.error_msg,
                  "{}'s fit() will not do checkpoint.".format(self.__class__.__name__))
        return sub_models


class _SubModel(ABC):
    def __init__(self, name, cfg, model, callbacks):
        self._cfg = cfg
        assert isinstance(model, Model)
        self._model = model
        self._cbs = callbacks
        self.name = name
        self.is_valid = True
        self.error_msg = self._model.__class__.__name__ + " " + self.name + " error message: "
        if not self._get_and_check_cfg():
            self.is_valid = False
        if not self._get_and_check_cbs():
            self.is_valid = False

    def step(self, step_idx=0):
        raise NotImplementedError

    def _get_and_check_cfg(self):
        if self._cfg is None:
            self.error_msg += "config is None;"
            return False
        if not self._cfg.check_valid():
            self.error_msg += self._cfg.error_msg
            return False
        return True

    def _get_and_check_cbs(self):
        message = "model callbacks' type must be model.Callback or List[model.Callback]."
        if self._cbs is None:
            self._cbs = []
            return True
        if isinstance(self._cbs, Callback):
            self._cbs = [self._cbs]
            return True
        assert isinstance(self._cbs, list), message
        for cb in self._cbs:
            assert isinstance(cb, Callback), message
        return True

    def _method_callback(self, method_name, *args, **kwargs):
        for cb in self._cbs:
            getattr(cb, method_name)(*args, **kwargs)

    def _get_and_check_step(self, method):
        if not self._model.method_overrided(method):
            self.error_msg += "model.%s() is empty;" % method
            return False
        return True

    def _get_and_check_opts(self, kind):
        self._opts = []
        if not self._model.method_overrided("configure_optimizers"):
            self.error_msg += "model.configure_optimizers() is empty;"
            return False
        message = "model.configure_optimizers() must return Optimizer or List[Optimizer, ...] or " \
                  "Tuple[Optimizer, ...]"
        opt_conf = self._model.configure_optimizers()
        if isinstance(opt_conf, kind):
            self._opts = [opt_conf]
        else:
            assert isinstance(opt_conf, (list, tuple)), message
            for opt in opt_conf:
                assert isinstance(opt, kind), message
            self._opts = opt_conf
        return True


def _loss_of(outputs):
    return outputs[0] if isinstance(outputs, tuple) and len(outputs) > 0 else outputs


def _infer_job_signature(data_module, batch, optimizer_idx, job):
    """The job's parameters: one placeholder per array of the first batch (OneFlow's _infer_job_signature)."""
    params = []
    for i, placeholder in enumerate(data_module.infer_oneflow_data_placeholder(batch, optimizer_idx)):
        params.append(inspect.Parameter(
            name=data_module.__class__.__name__ + "_opt_" + str(optimizer_idx) + "_para_" + str(i),
            kind=inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=placeholder))
    job.__signature__ = inspect.signature(job).replace(parameters=params)


def _legacy_optimizer_class():
    from oneflow_compat.optimizer.optimizers import Optimizer

    return Optimizer


class _TrainModel(_SubModel):
    """Training as legacy "train" job functions, one per optimizer."""

    def __init__(self, cfg=None, model=None, callbacks=None):
        super().__init__("training", cfg, model, callbacks)
        if not self._get_and_check_step("training_step"):
            self.is_valid = False
        if not self._get_and_check_opts(_legacy_optimizer_class()):
            self.is_valid = False
        if self.is_valid and not self._get_and_check_jobs():
            self.is_valid = False

    def step(self, step_idx=0):
        assert self.is_valid, self.error_msg
        for optimizer_idx in range(0, len(self._opts)):
            if self._is_numpy_input:
                batch = self._first_numpy_batch[optimizer_idx] if step_idx == 0 else \
                    self._cfg.data(step_idx, optimizer_idx)
                outputs = self._jobs[optimizer_idx](*batch).get()
            else:
                outputs = self._jobs[optimizer_idx]().get()
            self._method_callback("on_training_step_end", outputs=outputs, step_idx=step_idx,
                                  optimizer_idx=optimizer_idx)

    def _get_and_check_jobs(self):
        self._is_numpy_input = isinstance(self._cfg.data, NumpyDataModule)
        self._jobs = []
        if self._is_numpy_input:
            self._first_numpy_batch = []
            for optimizer_idx in range(0, len(self._opts)):
                batch = self._cfg.data(0, optimizer_idx)
                self._first_numpy_batch.insert(optimizer_idx, batch)
                self._jobs.insert(optimizer_idx, self._construct_numpy_job(batch, optimizer_idx))
        else:
            for optimizer_idx in range(0, len(self._opts)):
                self._jobs.insert(optimizer_idx, self._construct_job(optimizer_idx))
        return True

    def _construct_job(self, optimizer_idx=0):
        def job():
            batch = self._cfg.data(0, optimizer_idx)
            outputs = self._model.training_step(batch=batch, optimizer_idx=optimizer_idx)
            self._opts[optimizer_idx].minimize(_loss_of(outputs))
            return outputs

        job.__name__ = self._model.__class__.__name__ + "_Model_train_job_" + str(optimizer_idx)
        return _global_function(type="train", function_config=self._cfg.exe_cfg)(job)

    def _construct_numpy_job(self, batch, optimizer_idx):
        def job(*input_batch):
            outputs = self._model.training_step(batch=input_batch, optimizer_idx=optimizer_idx)
            self._opts[optimizer_idx].minimize(_loss_of(outputs))
            return outputs

        _infer_job_signature(self._cfg.data, batch, optimizer_idx, job)
        job.__name__ = self._model.__class__.__name__ + "_Model_train_numpy_job_" + str(optimizer_idx)
        return _global_function(type="train", function_config=self._cfg.exe_cfg)(job)


class _ValidateModel(_SubModel):
    """Validation as a legacy "predict" job function, every `step_interval` steps."""

    def __init__(self, cfg=None, model=None, callbacks=None):
        super().__init__("validation", cfg, model, callbacks)
        if not self._get_and_check_step("validation_step"):
            self.is_valid = False
        if self.is_valid and not self._get_and_check_job():
            self.is_valid = False

    def step(self, step_idx=0):
        assert self.is_valid
        if (step_idx + 1) % self._cfg.step_interval == 0:
            if self._is_numpy_input:
                batch = self._first_numpy_batch if step_idx == 0 else self._cfg.data(step_idx, 0)
                outputs = self._job(*batch).get()
            else:
                outputs = self._job().get()
            self._method_callback("on_validation_step_end", step_idx=step_idx, outputs=outputs)

    def _get_and_check_job(self):
        self._is_numpy_input = isinstance(self._cfg.data, NumpyDataModule)
        if not self._is_numpy_input:
            def job():
                return self._model.validation_step(self._cfg.data(0, 0))

            job.__name__ = self._model.__class__.__name__ + "_Model_eval_job"
        else:
            batch = self._cfg.data(0, 0)
            self._first_numpy_batch = batch

            def job(*input_batch):
                return self._model.validation_step(batch=input_batch)

            _infer_job_signature(self._cfg.data, batch, 0, job)
            job.__name__ = self._model.__class__.__name__ + "_Model_eval_numpy_job"
        self._job = _global_function(type="predict", function_config=self._cfg.exe_cfg)(job)
        return True


class _CheckpointModel(_SubModel):
    """The legacy variables loaded before the first step and saved to `<save_dirpath>-<step>`."""

    def __init__(self, cfg=None, model=None, callbacks=None):
        super().__init__("checkpointing", cfg, model, callbacks)

    def load(self):
        assert self.is_valid
        if self._cfg.need_load:
            self._load_checkpoint(self._cfg.load_dirpath)

    def step(self, step_idx=0):
        assert self.is_valid
        if self._cfg.need_save and (step_idx + 1) % self._cfg.save_step_interval == 0:
            self._save_checkpoint(dirpath=self._cfg.save_dirpath + "-" + str(step_idx))

    def _load_checkpoint(self, dirpath):
        _checkpoint.load_variables(_checkpoint.get(dirpath))

    def _save_checkpoint(self, dirpath):
        _checkpoint.save(dirpath)


class _TrainModelOOPStyle(_SubModel):
    """Training of a module run eagerly: backward, step, zero_grad per optimizer."""

    def __init__(self, cfg=None, model=None, callbacks=None):
        from oneflow_compat.optim.optimizer import Optimizer

        super().__init__("training", cfg, model, callbacks)
        if not self._get_and_check_step("training_step"):
            self.is_valid = False
        if not self._get_and_check_opts(Optimizer):
            self.is_valid = False

    def step(self, step_idx=0):
        assert self.is_valid, self.error_msg
        for optimizer_idx in range(0, len(self._opts)):
            batch = self._cfg.data(step_idx, optimizer_idx)
            outputs = self._model.training_step(batch=batch, optimizer_idx=optimizer_idx)
            _loss_of(outputs).backward()
            opt = self._opts[optimizer_idx]
            opt.step()
            opt.zero_grad()
            self._method_callback("on_training_step_end", outputs=outputs, step_idx=step_idx,
                                  optimizer_idx=optimizer_idx)


class _ValidateModelOOPStyle(_SubModel):
    def __init__(self, cfg=None, model=None, callbacks=None):
        super().__init__("validation", cfg, model, callbacks)
        if not self._get_and_check_step("validation_step"):
            self.is_valid = False

    def step(self, step_idx=0):
        from oneflow_compat.runtime.autograd import no_grad

        assert self.is_valid
        if (step_idx + 1) % self._cfg.step_interval == 0:
            with no_grad():
                inputs = self._cfg.data(step_idx, 0)
                model_previous_mode = self._model.training
                self._model.train()  # as OneFlow v0.4.0 (train(), not eval())
                outputs = self._model.validation_step(inputs)
                self._model.train(model_previous_mode)
            self._method_callback("on_validation_step_end", step_idx=step_idx, outputs=outputs)


class _CheckpointModelOOPStyle(_SubModel):
    """The module's state_dict loaded before the first step and saved to `<save_dirpath>-<step>`."""

    def __init__(self, cfg=None, model=None, callbacks=None):
        super().__init__("checkpointing", cfg, model, callbacks)

    def load(self):
        assert self.is_valid
        if self._cfg.need_load:
            from oneflow_compat._global import serialization

            self._model.load_state_dict(serialization.load(self._cfg.load_dirpath))

    def step(self, step_idx=0):
        assert self.is_valid
        if self._cfg.need_save and (step_idx + 1) % self._cfg.save_step_interval == 0:
            from oneflow_compat._global import serialization

            serialization.save(self._model.state_dict(), self._cfg.save_dirpath + "-" + str(step_idx))
