/**
 * Small PyTorch snapshots (the JSON form) whose out-of-memory error is known by construction, for
 * the post-mortem's and the job's tests. Each ends in an `oom` entry whose `device_free` sets the
 * wall (reserved then plus `device_free`).
 */
const MiB = 2 ** 20;
const BASE = 0x7f00_0000_0000;

/** A recording: entries in order, ending in an out-of-memory error. */
export class Recording {
  readonly entries: Record<string, unknown>[] = [];
  private add(action: string, addr: number, size: number, extra: object = {}): this {
    this.entries.push({
      action,
      addr,
      size,
      stream: 0,
      time_us: 1000 * this.entries.length,
      ...extra,
    });
    return this;
  }
  segment(offset: number, size: number): this {
    return this.add('segment_alloc', BASE + offset * MiB, size * MiB);
  }
  alloc(offset: number, size: number): this {
    return this.add('alloc', BASE + offset * MiB, size * MiB);
  }
  free(offset: number, size: number): this {
    this.add('free_requested', BASE + offset * MiB, size * MiB);
    return this.add('free_completed', BASE + offset * MiB, size * MiB);
  }
  oom(size: number, deviceFree: number): this {
    return this.add('oom', 0, size * MiB, { device_free: deviceFree * MiB });
  }
  snapshot(): string {
    return JSON.stringify({
      segments: [],
      device_traces: [this.entries],
      allocator_settings: { PYTORCH_CUDA_ALLOC_CONF: '' },
    });
  }
}

/** A 60 MiB segment split in three, the outer thirds freed, then 40 MiB asked at a 90 MiB wall. */
export function fragmentation(): Recording {
  return new Recording()
    .segment(0, 60)
    .alloc(0, 60)
    .free(0, 60)
    .alloc(0, 20)
    .alloc(20, 20)
    .alloc(40, 20)
    .free(0, 20)
    .free(40, 20)
    .oom(40, 30);
}

/**
 * A 100 MiB cached block split by a 30 MiB request, then 100 MiB asked at a 135 MiB wall: avoided
 * by max_split_size_mb (the 30 MiB gets a segment of its own), not by expandable segments.
 */
export function oversizeSplit(): Recording {
  return new Recording().segment(0, 100).alloc(0, 100).free(0, 100).alloc(0, 30).oom(100, 35);
}

/**
 * A job's three ranks, by file name: ranks 0 and 1 die as {@link fragmentation} and
 * {@link oversizeSplit} do, rank 2 frees what it allocated and lives.
 */
export function deadRanksJob(): Record<string, string> {
  return {
    'rank0_snapshot.json': fragmentation().snapshot(),
    'rank1_snapshot.json': oversizeSplit().snapshot(),
    'rank2_snapshot.json': new Recording().segment(0, 20).alloc(0, 20).free(0, 20).snapshot(),
  };
}
