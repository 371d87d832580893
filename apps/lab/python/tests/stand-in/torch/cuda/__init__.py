"""torch.cuda: lazy initialization (queued calls run before the state says it is initialized,
as in PyTorch), the current device, statistics, and allocate/free for the tests' programs."""

import torch
from torch import _state
from torch.cuda import memory  # noqa: F401


class OutOfMemoryError(RuntimeError):
    pass


def is_initialized():
    return _state.initialized


def _lazy_call(callable, **kwargs):
    if _state.initialized:
        callable()
    else:
        _state.queued.append(callable)


def _lazy_init():
    if _state.initialized or _state.initializing:
        return
    if torch.version.cuda is None:
        raise AssertionError("Torch not compiled with CUDA enabled")
    _state.log("_lazy_init")
    _state.initializing = True
    try:
        for call in _state.queued:
            call()
    finally:
        _state.initializing = False
    _state.initialized = True


def init():
    _lazy_init()


def set_device(device):
    _lazy_init()
    _state.device = device
    _state.log("set_device", device=device)


def current_device():
    _lazy_init()
    return _state.device


def memory_stats(device=None):
    return {
        "allocated_bytes.all.current": _state.allocated(),
        "allocated_bytes.all.peak": _state.peaks["allocated"],
        "reserved_bytes.all.current": _state.reserved(),
        "reserved_bytes.all.peak": _state.peaks["reserved"],
        "inactive_split_bytes.all.current": 0,
        "num_ooms": sum(1 for entry in _state.trace if entry["action"] == "oom"),
    }


def set_per_process_memory_fraction(fraction, device=None):
    _lazy_init()
    _state.fraction = float(fraction)


def get_per_process_memory_fraction(device=None):
    _lazy_init()
    return _state.fraction


def mem_get_info(device=None):
    _state.log("mem_get_info", device=device)
    return (_state.memory - _state.reserved(), _state.memory)


def allocate(size):
    """A tensor of `size` bytes: its address (the request rounded to 512 bytes)."""
    _lazy_init()
    _state.device_used = True
    size = -(-size // 512) * 512
    for segment in _state.segments:
        address, total, top = segment
        if top + size <= address + total:
            segment[2] = top + size
            return _allocated(top, size)
    total = max(_state.SEGMENT, -(-size // 2**21) * 2**21)
    if _state.reserved() + total > _state.cap():
        free = _state.memory - _state.reserved()
        _state.record("oom", free, size)
        # As PyTorch: the observers get the segment it tried to allocate, which its message names,
        # and the limit: the device's memory, or its fraction's share.
        for observer in list(_state.observers):
            observer(_state.device, total, _state.cap(), free)
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes" % total)
    address = _state.BASE + sum(s for _, s, _ in _state.segments)
    _state.segments.append([address, total, address + size])
    _state.record("segment_alloc", address, total)
    _state.peaks["reserved"] = max(_state.peaks["reserved"], _state.reserved())
    return _allocated(address, size)


def _allocated(address, size):
    _state.blocks[address] = (size, size)
    _state.peaks["allocated"] = max(_state.peaks["allocated"], _state.allocated())
    _state.record("alloc", address, size)
    return address


def free(address):
    size, _ = _state.blocks.pop(address)
    _state.record("free_requested", address, size)
    _state.record("free_completed", address, size)
