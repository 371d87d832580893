"""torch._C: the out-of-memory observers and whether a device has a context."""

from torch import _state


def _cuda_attach_out_of_memory_observer(observer):
    _state.log("_cuda_attach_out_of_memory_observer")
    _state.observers.append(observer)


def _cuda_hasPrimaryContext(device):
    return _state.device_used
