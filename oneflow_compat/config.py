"""`flow.config.*`: resources of the session. After the session started every setter is a no-op that prints the
legacy message and returns False."""
from oneflow_compat.framework import client_mode
from oneflow_compat import custom_ops
from oneflow_compat.framework import session as sess


def _setter(fn):
    def wrapper(*args, **kwargs):
        client_mode.use(client_mode.LEGACY, "flow.config.%s" % fn.__name__)
        s = sess.default_session()
        if s.status != "open":
            print(sess.NOTHING_HAPPENED)
            return False
        return fn(s.resource, *args, **kwargs)

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


@_setter
def gpu_device_num(res, val):
    """GPUs per machine; without a usable CUDA device, that many CPU devices (as OneFlow's CPU-only builds)."""
    from oneflow_compat.backend import devices

    if not (type(val) is int and val >= 0):
        raise AssertionError("gpu_device_num must be a non-negative int")
    if devices.cuda_usable():
        res.gpu_device_num = val
    else:
        if val > 0:
            devices.fallback_notice("flow.config.gpu_device_num(%d) runs %d CPU device%s instead"
                                    % (val, val, "" if val == 1 else "s"))
        res.gpu_device_num = 0
        res.cpu_device_num = max(1, val)
        res.gpu_requested = val > 0


@_setter
def cpu_device_num(res, val):
    """CPU devices per machine; under ONEFLOW_COMPAT_DEVICE=gpu, that many logical devices on the GPU."""
    from oneflow_compat.backend import devices

    if not (type(val) is int and val >= 1):
        raise AssertionError("cpu_device_num must be a positive int")
    res.cpu_device_num = val
    if devices.every_device_is_gpu():
        res.gpu_device_num = val


@_setter
def machine_num(res, val):
    if not (type(val) is int and val >= 1):
        raise AssertionError("machine_num must be a positive int")
    res.machine_num = val


@_setter
def enable_legacy_model_io(res, val=True):
    res.legacy_model_io = bool(val)


@_setter
def enable_model_io_v2(res, val=True):
    res.legacy_model_io = not bool(val)


def legacy_model_io_enabled():
    return sess.default_session().resource.legacy_model_io


@_setter
def enable_debug_mode(res, val=True):
    res.debug_mode = bool(val)


@_setter
def load_library(res, val):
    """Refused (see `custom_ops.refuse_library`): a missing file names the file; an existing one names it too."""
    custom_ops.refuse_library("flow.config.load_library", val)


@_setter
def load_library_now(res, val):
    custom_ops.refuse_library("flow.config.load_library_now", val)


def _ignored(name):
    @_setter
    def setter(res, *args, **kwargs):
        """Accepted for compatibility; no effect here."""

    setter.__name__ = name
    return setter


for _name in ("comm_net_worker_num", "max_mdsave_worker_num", "enable_numa_aware_cuda_malloc_host",
              "compute_thread_pool_size", "rdma_mem_block_mbyte", "rdma_recv_msg_buf_mbyte", "reserved_host_mem_mbyte",
              "reserved_device_mem_mbyte", "thread_enable_local_message_queue",
              "save_downloaded_file_to_local_fs", "persistence_buf_byte", "collect_act_event",
              "enable_tensor_float_32_compute", "enable_mem_chain_merge", "nccl_use_compute_stream",
              "disable_group_boxing_by_dst_parallel", "enable_fusion", "enable_cudnn_conv_heuristic_search_algo"):
    globals()[_name] = _ignored(_name)


@_setter
def use_rdma(res, val=True):
    """Turning RDMA on is refused (issue 20: RDMA/grpc configuration is out of scope); off is what there is."""
    if val:
        from oneflow_compat._api.refusals import GRPC

        raise NotImplementedError("flow.config.use_rdma(True): %s" % GRPC)


class _CollectiveBoxing:
    def __getattr__(self, name):
        return _ignored(name)


collective_boxing = _CollectiveBoxing()
