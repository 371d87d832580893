"""torch.cuda.memory: the history switch and the snapshot, in PyTorch's shape."""

import sys

from torch import _state


def _record_memory_history(
    enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None
):
    _state.log(
        "_record_memory_history",
        enabled=enabled,
        context=context,
        stacks=stacks,
        max_entries=max_entries,
    )
    _state.recording = None if enabled is None else (max_entries, context)


def _snapshot(device=None):
    _state.log("_snapshot")
    segments = []
    for address, total, _ in _state.segments:
        blocks = []
        at = address
        for start in sorted(a for a in _state.blocks if address <= a < address + total):
            size, requested = _state.blocks[start]
            if start > at:
                blocks.append(_block(at, start - at, 0, "inactive"))
            blocks.append(_block(start, size, requested, "active_allocated"))
            at = start + size
        if at < address + total:
            blocks.append(_block(at, address + total - at, 0, "inactive"))
        used = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
        segments.append(
            {
                "device": _state.device,
                "address": address,
                "total_size": total,
                "allocated_size": used,
                "active_size": used,
                "requested_size": used,
                "stream": 0,
                "segment_type": "large",
                "segment_pool_id": (0, 0),
                "is_expandable": False,
                "frames": [],
                "blocks": blocks,
            }
        )
    traces = [[] for _ in range(_state.device + 1)]
    traces[_state.device] = list(_state.trace)
    return {"segments": segments, "device_traces": traces}


def _block(address, size, requested, state):
    return {
        "address": address,
        "size": size,
        "requested_size": requested,
        "state": state,
        "frames": [],
    }
