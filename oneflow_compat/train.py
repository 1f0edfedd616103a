"""`flow.train.*`: the legacy checkpoint classes."""
import os

from oneflow_compat import checkpoint as ckpt
from oneflow_compat.framework import checkpoint_format as fmt
from oneflow_compat.framework import session as sess


class CheckPoint:
    """Legacy `flow.train.CheckPoint()`; under model IO v2 (the default) it maps onto `flow.checkpoint.*`."""

    def __init__(self):
        if not sess.default_session().resource.legacy_model_io:
            print("\033[1mWARNING: 'flow.train.CheckPoint' is deprecated. Please use the new API:\033[0m\n"
                  "flow.train.CheckPoint().save(path) => \033[1m\033[92mflow.checkpoint.save(path)\033[0m\n"
                  "flow.train.CheckPoint().load(path) => \033[1m\033[92mflow.load_variables(flow.checkpoint.get(path))"
                  "\033[0m\nflow.train.CheckPoint().init() is not needed any more.")

    def init(self):
        sess.default_session().try_init()

    def save(self, path):
        s = sess.default_session()
        if s.resource.legacy_model_io:
            s.try_init()
            tensors = {n: v.numpy() for n, v in ckpt.get_all_variables().items()}
            fmt.write_on_rank0(s.runtime.comm, path, lambda: fmt.save_tensors(path, tensors, write_legacy=True))
            return
        ckpt.save(path)

    def load(self, path):
        s = sess.default_session()
        s.try_init()
        loaded = fmt.load_checkpoint_dir(path)
        if s.resource.legacy_model_io:
            for name in s.vars.specs:
                if name not in loaded:
                    print("WARNING! CANNOT find variable path in : %s. It will be initialized." %
                          os.path.join(path, name, "out"))
        ckpt.load_variables(loaded)


class SimpleCheckPointManager:
    def __init__(self, root_path, prefix="snapshot_"):
        if not os.path.exists(root_path):
            os.makedirs(root_path)
        elif not os.path.isdir(root_path):
            raise AssertionError("%s is not a directory" % root_path)
        self._root_path, self._prefix = root_path, prefix

    def list_checkpoints(self):
        def is_snapshot(name):
            if not name.startswith(self._prefix):
                return False
            return os.path.exists(os.path.join(self._root_path, name, "snapshot_done"))

        return sorted(f for f in os.listdir(self._root_path) if is_snapshot(f))

    def latest_checkpoint(self):
        names = self.list_checkpoints()
        return names[-1] if names else None

    def initialize_or_restore(self):
        name = self.latest_checkpoint()
        if name:
            CheckPoint().load(self._get_snapshot_path(name))
        else:
            sess.default_session().try_init()
            self.save()

    def save(self):
        CheckPoint().save(self._get_snapshot_path(self._next_snapshot_name()))

    def _next_snapshot_name(self):
        import datetime

        return self._prefix + datetime.datetime.now().strftime("%Y%m%d_%H%M%S_%f")

    def _get_snapshot_path(self, name):
        return os.path.join(self._root_path, name)
