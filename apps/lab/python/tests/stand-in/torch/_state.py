"""The stand-in's state: the simulated device, its allocator and history, and the call log."""

import json
import os
import time

SEGMENT = 20 * 2**20
BASE = 0x7F0000000000

log_path = os.environ.get("STAND_IN_TORCH_LOG")
memory = int(os.environ.get("STAND_IN_TORCH_MEMORY", str(64 * 2**20)))
initialized = False
initializing = False
queued = []
observers = []
device = 0
device_used = False
#: set_per_process_memory_fraction's, 1.0 when none is set (as PyTorch reports it).
fraction = 1.0
#: None when history is off, else (max_entries, context).
recording = None
trace = []
#: [address, size, top] per segment; blocks: address -> (size, requested).
segments = []
blocks = {}
peaks = {"reserved": 0, "allocated": 0}


def log(call, **fields):
    if log_path is None:
        return
    fields["call"] = call
    fields["initialized"] = initialized
    with open(log_path, "a", encoding="utf-8") as file:
        file.write(json.dumps(fields) + "\n")


def record(action, address, size, frames=True):
    if recording is None:
        return
    max_entries, context = recording
    entry = {"action": action, "size": size, "stream": 0, "time_us": int(time.time() * 1e6)}
    entry["device_free" if action == "oom" else "addr"] = address
    if context is not None and frames:
        entry["frames"] = [{"filename": "train.py", "line": 7, "name": "step"}]
    trace.append(entry)
    del trace[: max(0, len(trace) - max_entries)]


def cap():
    """The bytes the pool may reserve: the memory, or its fraction (floored, as PyTorch)."""
    return memory if fraction >= 1 else int(fraction * memory)


def reserved():
    return sum(size for _, size, _ in segments)


def allocated():
    return sum(size for size, _ in blocks.values())
