/**
 * A job's ring-buffer dumps made from real recordings, as PyTorch would have written them while the
 * job ran: every few steps each rank dumps its allocator's state and the last `maxEntries` trace
 * entries (`_record_memory_history(max_entries=...)`), at exit once more, and one rank may die of an
 * out-of-memory error and dump at its observer. For the tests and demos of `allot-lab watch`: the
 * files land in a folder one after another, as a running job's would.
 *
 * ```
 *  recording ─► its entries (with addresses) and its trace
 *  step s of n: the cut after the last allocation or free at or before s/n of the entries
 *               (± a seeded jitter per rank, so ranks do not cut alike)
 *  dump at cut c: segments = the pool at c, replayed with the recorded settings (PoolStepper),
 *                 checked against the blocks the entries say are live; entries [c − maxEntries, c)
 *  out of memory: the first allocation past `oomAfter` of the entries that made PyTorch cudaMalloc
 *                 a segment of S bytes while the cache held less than S in whole free segments;
 *                 device_free then below S: PyTorch gives back those free segments (segment_free),
 *                 fails, and writes an `oom` entry (its rounded request, device_free after the
 *                 release), and the observer dumps; the rank writes nothing more
 *  under a fraction: the same wall is PyTorch's cap (`set_per_process_memory_fraction` on an 80 GiB
 *                 card), not the card: device_free is what the card has left, and beside every
 *                 dump lies the recorder's sidecar, stating the card and the fraction (and, beside
 *                 the OOM dump, the limit the observer was told)
 * ```
 *
 * The replay of the recorded settings reproduces PyTorch's pool to the byte on the recordings in
 * `../shared/traces/pytorch-h100`, so a dump's segments are those PyTorch held: each dump is checked
 * block by block against the entries before it is written. Recordings on one stream, with plain
 * (not expandable) segments. Dumps are written with the workloads' snapshot encoder
 * (`torchSnapshotChunks` of a base snapshot), under a temporary name renamed when complete.
 */
import { closeSync, mkdirSync, openSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseAllocConf, roundSize } from '@allot/caching';
import { Random, type Trace, torchSnapshotChunks, type UnpickledValue } from '@allot/workloads';
import { UNLIMITED_DEVICE } from '../analysis/device';
import { BLOCK_FIELDS, type PoolState, PoolStepper } from '../analysis/pool-stepper';
import { fractionOfLimit, SIDECAR_FORMAT, sidecarPath } from '../analysis/sidecar';
import { ACTION, type Dump, plainEntry } from './dump-entries';
import { readDump } from './read-dump';

/** One rank of a generated job. */
export interface RingRank {
  /** The recording this rank replays: a PyTorch snapshot file. */
  readonly recording: string;
  /** Whether the rank runs out of memory (see the module comment). @defaultValue false */
  readonly oom?: boolean;
  /**
   * Whether the rank ran under a per-process memory fraction that its OOM is the cap of, with
   * `allot-lab record`'s sidecars beside its dumps (see the module comment). Needs `oom`.
   * @defaultValue false
   */
  readonly fraction?: boolean;
  /** This rank's ring buffer, when it differs from the job's. */
  readonly maxEntries?: number;
}

/** Options of {@link ringJob}. */
export interface RingJobOptions {
  readonly ranks: readonly RingRank[];
  /** Steps each recording is cut into. @defaultValue 16 */
  readonly steps?: number;
  /** A dump every this many steps (and one at exit). @defaultValue 4 */
  readonly every?: number;
  /** Trace entries each dump keeps, the latest (PyTorch's `max_entries`). @defaultValue 20_000 */
  readonly maxEntries?: number;
  /** Where in the recording, as a share of its entries, the OOM rank may first fail. @defaultValue 0.5 */
  readonly oomAfter?: number;
  /** Seed of the ranks' jitter. @defaultValue 1 */
  readonly seed?: number;
  /** Names: the recorder's `rankR_stepN[_exit|_oom].pickle`, or torchtitan's folders. @defaultValue 'allot-lab' */
  readonly naming?: 'allot-lab' | 'torchtitan';
  /** Python frames per entry and block (synthetic, seeded), for the post-mortem's source lines. @defaultValue 0 */
  readonly stackDepth?: number;
}

/** One dump of the job, in the order the job writes them. */
export interface PlannedDump {
  readonly rank: number;
  /** The step in its name: the steps taken (`record`'s names), or torchtitan's step under way. */
  readonly step: number;
  readonly kind: 'step' | 'exit' | 'oom';
  /** The file's path under the job's folder. */
  readonly path: string;
  /** The entries it holds: `[from, to)` of the recording's (the OOM dump: and its own at the end). */
  readonly from: number;
  readonly to: number;
}

/** A generated job: its dumps in order, and how to write each. */
export interface RingJob {
  readonly dumps: readonly PlannedDump[];
  /** Writes `dump` under `folder` (a temporary name, then renamed); returns its path. */
  write(dump: PlannedDump, folder: string): Promise<string>;
  /** Writes rank `rank`'s whole recording as the job ran it (to its OOM, if it died) to `path`. */
  writeWhole(rank: number, path: string): Promise<void>;
}

const MIB = 2 ** 20;
/** The card a rank under a fraction ran on. */
const FRACTION_CARD = 80 * 2 ** 30;

/** The out-of-memory error a rank dies of. */
interface PlannedOom {
  /** Entries before it, from the recording's (the `segment_alloc` it asked for and on are not). */
  readonly cut: number;
  /** The trace event whose state is the pool then. */
  readonly event: number;
  /** Bytes asked for (rounded as PyTorch's `params.size()`), its stream and time. */
  readonly sizeBytes: number;
  readonly stream: number;
  readonly time: number;
  /** Whole free segments PyTorch gives back first: [address, size]. */
  readonly released: readonly (readonly [number, number])[];
  /** `device_free` after that. */
  readonly deviceFree: number;
  /** The bytes PyTorch could reserve: reserved after the release, plus `deviceFree` on a card. */
  readonly limitBytes: number;
  /** The segment PyTorch asked the driver for, as its error message names it. */
  readonly allocationBytes: number;
}

/** A rank's recording and what it is cut into. */
interface RankPlan {
  readonly rank: number;
  readonly dump: Dump;
  readonly stepper: PoolStepper;
  /** Per step 1 … steps, the cut (entries before it) and its trace event. */
  readonly cuts: readonly { readonly cut: number; readonly event: number }[];
  readonly oom: PlannedOom | null;
  /** The step the OOM happens in. */
  readonly oomStep: number | null;
  readonly maxEntries: number;
  /** Whether the rank ran under a fraction (its dumps have sidecars). */
  readonly fraction: boolean;
}

/** The index of the last event of `trace` whose entry lies before entry `cut`, or -1. */
function lastEventBefore(trace: Trace, cut: number): number {
  const location = trace.location!;
  let lo = 0;
  let hi = trace.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (location[mid]! <= cut) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** The cuts of a recording (see the module comment). */
function cutsOf(trace: Trace, entries: number, steps: number, random: Random) {
  const cuts: { cut: number; event: number }[] = [];
  const stepEntries = entries / steps;
  for (let step = 1; step <= steps; step++) {
    const jitter = step === steps ? 0 : Math.round((random.next() - 0.5) * 0.2 * stepEntries);
    const event = lastEventBefore(
      trace,
      Math.min(entries, Math.round(step * stepEntries) + jitter),
    );
    cuts.push({ cut: trace.location![event]!, event });
  }
  return cuts;
}

function checkRecording(dump: Dump, file: string): void {
  const settings = parseAllocConf(recordedConf(dump));
  if (settings.expandableSegments) {
    throw new Error(`${file}: ring dumps are made of recordings with plain segments only`);
  }
  if (dump.trace.stream !== undefined) {
    throw new Error(`${file}: ring dumps are made of recordings on one stream only`);
  }
  if (dump.trace.location === undefined || dump.trace.start === undefined) {
    throw new Error(`${file}: the recording has no entry positions or no starting state`);
  }
}

function recordedConf(dump: Dump): string {
  const conf = dump.trace.meta.torchAllocConf;
  return typeof conf === 'string' ? conf : '';
}

/** The pool's state just after trace event `event`, replayed with the recorded settings. */
function stateAt(plan: { dump: Dump; stepper: PoolStepper }, event: number): PoolState {
  return plan.stepper.stateAt(event, parseAllocConf(recordedConf(plan.dump)), UNLIMITED_DEVICE);
}

/** Bytes of the whole free segments of `state`, by segment: [address, size]. */
function wholeFreeSegments(state: PoolState): [number, number][] {
  const blocks = new Map<number, { free: boolean; count: number }>();
  for (let b = 0; b < state.blocks.length; b += BLOCK_FIELDS) {
    const s = state.blocks[b]!;
    const entry = blocks.get(s) ?? { free: true, count: 0 };
    entry.count++;
    if (state.blocks[b + 3] !== 1) entry.free = false;
    blocks.set(s, entry);
  }
  const out: [number, number][] = [];
  state.segments.forEach((segment, s) => {
    const entry = blocks.get(s);
    if (entry?.free && entry.count === 1) out.push([segment.address, segment.size]);
  });
  return out;
}

/** The out-of-memory error of a rank that dies (see the module comment), or null when none fits. */
function plannedOom(
  plan: { dump: Dump; stepper: PoolStepper },
  after: number,
  fraction: boolean,
): PlannedOom | null {
  const { entries, trace } = plan.dump;
  const settings = parseAllocConf(recordedConf(plan.dump));
  let fallback: PlannedOom | null = null;
  for (let k = Math.ceil(after * entries.length); k < entries.length; k++) {
    if (entries.action[k] !== ACTION.alloc || entries.action[k - 1] !== ACTION.segment_alloc) {
      continue;
    }
    const segment = entries.size[k - 1]!;
    if (segment < 20 * MIB) continue;
    const event = lastEventBefore(trace, k - 1);
    const state = stateAt(plan, event);
    const released = wholeFreeSegments(state);
    const freeBytes = released.reduce((sum, [, size]) => sum + size, 0);
    if (freeBytes >= segment) continue;
    const room = Math.floor((segment - freeBytes) / 2 / (2 * MIB)) * 2 * MIB;
    const limitBytes = state.reservedBytes + room;
    const oom: PlannedOom = {
      cut: k - 1,
      event,
      sizeBytes: roundSize(entries.size[k]!, settings.roundupPower2Divisions),
      stream: entries.stream[k]!,
      time: entries.time[k]!,
      released,
      // Under a fraction the card has room, and the cap (the same wall) stops the request.
      deviceFree: fraction ? FRACTION_CARD - (state.reservedBytes - freeBytes) : room + freeBytes,
      limitBytes,
      allocationBytes: segment,
    };
    if (released.length === 0) return oom;
    fallback ??= oom;
  }
  return fallback;
}

/**
 * The blocks the entries before `cut` leave live, by address: those live when the recording began
 * (its starting state) and those allocated since, less those freed; `pending` when a free was
 * requested and not yet completed.
 */
function liveBlocks(dump: Dump, cut: number): Map<number, { size: number; pending: boolean }> {
  const live = new Map<number, { size: number; pending: boolean }>();
  for (const segment of dump.trace.start!.segments) {
    for (const block of segment.blocks) {
      live.set(segment.address + block.offset, { size: block.requested, pending: false });
    }
  }
  const { action, addr, size } = dump.entries;
  for (let i = 0; i < cut; i++) {
    const a = action[i];
    if (a === ACTION.alloc && size[i]! > 0) live.set(addr[i]!, { size: size[i]!, pending: false });
    else if (a === ACTION.free_requested) {
      const block = live.get(addr[i]!);
      if (block !== undefined) block.pending = true;
    } else if (a === ACTION.free_completed || a === ACTION.free) live.delete(addr[i]!);
  }
  return live;
}

/**
 * The end state's `segments` PyTorch would dump at `cut`: `state`'s, each live block checked
 * against the entries; `left` segments are given back (an OOM's release).
 */
function segmentsAt(
  plan: RankPlan,
  state: PoolState,
  cut: number,
  left: ReadonlySet<number> = new Set(),
): UnpickledValue[] {
  const live = liveBlocks(plan.dump, cut);
  const bySegment = state.segments.map(() => [] as UnpickledValue[]);
  const totals = state.segments.map(() => ({ allocated: 0, active: 0, requested: 0 }));
  let matched = 0;
  for (let b = 0; b < state.blocks.length; b += BLOCK_FIELDS) {
    const s = state.blocks[b]!;
    const address = state.blocks[b + 1]!;
    const size = state.blocks[b + 2]!;
    const free = state.blocks[b + 3] === 1;
    const block = free ? undefined : live.get(address);
    if (!free) {
      if (block === undefined || block.size !== state.blocks[b + 4]) {
        throw new Error(
          `rank ${plan.rank}: the replay does not hold PyTorch's block at 0x${address.toString(16)} after entry ${cut}`,
        );
      }
      matched++;
      const total = totals[s]!;
      total.active += size;
      total.requested += block.size;
      if (!block.pending) total.allocated += size;
    }
    bySegment[s]!.push({
      address,
      size,
      requested_size: block?.size ?? 0,
      state: free ? 'inactive' : block!.pending ? 'active_pending_free' : 'active_allocated',
      frames: [],
    });
  }
  if (matched !== live.size) {
    throw new Error(
      `rank ${plan.rank}: the replay holds ${matched} of ${live.size} live blocks after entry ${cut}`,
    );
  }
  const segments: UnpickledValue[] = [];
  state.segments.forEach((segment, s) => {
    if (left.has(segment.address)) return;
    segments.push({
      device: plan.dump.device,
      address: segment.address,
      total_size: segment.size,
      allocated_size: totals[s]!.allocated,
      active_size: totals[s]!.active,
      requested_size: totals[s]!.requested,
      stream: 0,
      segment_type: segment.pool === 'small' ? 'small' : 'large',
      segment_pool_id: [0, 0],
      is_expandable: false,
      frames: [],
      blocks: bySegment[s]!,
    });
  });
  return segments;
}

/** The snapshot dict of a dump: `segments`, the device's `entries`, the recorded settings. */
function snapshotDict(plan: RankPlan, segments: UnpickledValue[], entries: UnpickledValue[]) {
  const device_traces: UnpickledValue[] = [];
  for (let d = 0; d < plan.dump.device; d++) device_traces.push([]);
  device_traces.push(entries);
  return {
    segments,
    device_traces,
    allocator_settings: (plan.dump.allocConf === undefined
      ? {}
      : { PYTORCH_CUDA_ALLOC_CONF: plan.dump.allocConf }) as UnpickledValue,
  };
}

/**
 * Entries `[from, to)` as a dump holds them. PyTorch converts each entry's clock reading to
 * `time_us` again at every snapshot, with a scale it measures then, so one entry's time differs by
 * a microsecond between two dumps now and then: `jitter` moves one entry in 16 by ±1 µs, as a new
 * conversion would.
 */
function entriesOf(dump: Dump, from: number, to: number, jitter: Random): UnpickledValue[] {
  const out: UnpickledValue[] = [];
  for (let i = from; i < to; i++) {
    const entry = plainEntry(dump.entries, i);
    const time = entry.time_us;
    if (typeof time === 'number' && jitter.integer(0, 15) === 0) {
      entry.time_us = time + (jitter.integer(0, 1) === 0 ? -1 : 1);
    }
    out.push(entry as UnpickledValue);
  }
  return out;
}

/** `entry` with `time_us` when the time is known. */
function timed(entry: { [key: string]: UnpickledValue }, time: number): UnpickledValue {
  return Number.isNaN(time) ? entry : { ...entry, time_us: time };
}

/** What PyTorch records when the rank runs out of memory: its releases, then the `oom` entry. */
function oomEntries(oom: PlannedOom): UnpickledValue[] {
  return [
    ...oom.released.map(([address, size]) =>
      timed({ action: 'segment_free', addr: address, size, stream: oom.stream }, oom.time),
    ),
    timed(
      { action: 'oom', device_free: oom.deviceFree, size: oom.sizeBytes, stream: oom.stream },
      oom.time,
    ),
  ];
}

/**
 * The sidecar `allot-lab record` writes beside a dump of a rank under a fraction (the bootstrap's
 * `facts`, the fields the lab reads): the card, the fraction, and the observer's figures.
 */
function writeSidecar(plan: RankPlan, dump: PlannedDump, snapshotPath: string): void {
  const oom = plan.oom;
  const path = sidecarPath(snapshotPath);
  if (!plan.fraction || oom === null || path === null) return;
  const sidecar = {
    format: SIDECAR_FORMAT,
    version: 1,
    rank: plan.rank,
    step: dump.step,
    reason: dump.kind,
    device: 0,
    deviceTotalBytes: FRACTION_CARD,
    memoryFraction: fractionOfLimit(oom.limitBytes, FRACTION_CARD),
    oom:
      dump.kind === 'oom'
        ? {
            device: 0,
            allocationBytes: oom.allocationBytes,
            limitBytes: oom.limitBytes,
            deviceFreeBytes: oom.deviceFree,
          }
        : null,
  };
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, `${JSON.stringify(sidecar)}\n`);
  renameSync(`${path}.tmp`, path);
}

/** Writes `snapshot` to `path` through a temporary name, letting the event loop turn between chunks. */
async function writeSnapshot(snapshot: UnpickledValue, path: string, depth: number, seed: number) {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.tmp`;
  const fd = openSync(temporary, 'w');
  try {
    const chunks = torchSnapshotChunks({ base: snapshot, depth, seed });
    for (let chunk = chunks.next(); !chunk.done; chunk = chunks.next()) {
      writeSync(fd, chunk.value);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
}

function dumpPath(
  naming: RingJobOptions['naming'],
  rank: number,
  step: number,
  kind: PlannedDump['kind'],
) {
  if (naming === 'torchtitan') {
    const folder = `iteration_${step}${kind === 'step' ? '' : '_exit'}`;
    return join('memory_snapshot', folder, `rank${rank}_memory_snapshot.pickle`);
  }
  return `rank${rank}_step${step}${kind === 'step' ? '' : `_${kind}`}.pickle`;
}

/**
 * Plans a job's dumps from its ranks' recordings (read and checked here; see the module comment).
 * @throws Error when a recording cannot be made into faithful dumps
 */
export async function ringJob(options: RingJobOptions): Promise<RingJob> {
  const { steps = 16, every = 4, maxEntries = 20_000, oomAfter = 0.5, seed = 1 } = options;
  const depth = options.stackDepth ?? 0;
  const random = new Random(seed);
  const recordings = new Map<string, Dump>();
  const plans: RankPlan[] = [];
  for (const [rank, spec] of options.ranks.entries()) {
    let dump = recordings.get(spec.recording);
    if (dump === undefined) {
      dump = await readDump(spec.recording, spec.recording);
      checkRecording(dump, spec.recording);
      recordings.set(spec.recording, dump);
    }
    const stepper = new PoolStepper(dump.trace);
    const cuts = cutsOf(dump.trace, dump.entries.length, steps, random);
    if (spec.fraction === true && spec.oom !== true) {
      throw new Error(`rank ${rank}: a rank under a fraction runs out of memory (oom: true)`);
    }
    const oom =
      spec.oom === true
        ? plannedOom(
            { dump, stepper: new PoolStepper(dump.trace) },
            oomAfter,
            spec.fraction === true,
          )
        : null;
    if (spec.oom === true && oom === null) {
      throw new Error(
        `${spec.recording}: no allocation past ${oomAfter} of it can run out of memory`,
      );
    }
    const oomStep = oom === null ? null : cuts.findIndex((cut) => cut.cut > oom.cut) + 1;
    plans.push({
      rank,
      dump,
      stepper,
      cuts,
      oom,
      oomStep,
      maxEntries: spec.maxEntries ?? maxEntries,
      fraction: spec.fraction === true,
    });
  }
  const dumps: PlannedDump[] = [];
  for (let step = 1; step <= steps; step++) {
    for (const plan of plans) {
      const { oom, oomStep } = plan;
      if (oomStep !== null && step > oomStep) continue;
      const cut = step === oomStep ? oom!.cut : plan.cuts[step - 1]!.cut;
      const kind = step === oomStep ? 'oom' : step === steps ? 'exit' : 'step';
      if (kind === 'step' && step % every !== 0) continue;
      // The recorder names a dump by the steps taken: its OOM dump's error came in the next step.
      // torchtitan names the step under way.
      const named = kind === 'oom' && options.naming !== 'torchtitan' ? step - 1 : step;
      dumps.push({
        rank: plan.rank,
        step: named,
        kind,
        path: dumpPath(options.naming, plan.rank, named, kind),
        from: Math.max(0, cut - plan.maxEntries),
        to: cut,
      });
    }
  }
  const build = (plan: RankPlan, dump: PlannedDump): UnpickledValue => {
    const oom = dump.kind === 'oom' ? plan.oom! : null;
    const event = oom !== null ? oom.event : plan.cuts[dump.step - 1]!.event;
    const state = stateAt(plan, event);
    const left = new Set(oom?.released.map(([address]) => address) ?? []);
    const segments = segmentsAt(plan, state, dump.to, left);
    const kind = ['step', 'exit', 'oom'].indexOf(dump.kind);
    const jitter = new Random(seed * 65_536 + plan.rank * 1_024 + dump.step * 4 + kind);
    const entries = entriesOf(plan.dump, dump.from, dump.to, jitter);
    if (oom !== null) entries.push(...oomEntries(oom));
    return snapshotDict(plan, segments, entries);
  };
  return {
    dumps,
    async write(dump, folder) {
      const path = join(folder, dump.path);
      const plan = plans[dump.rank]!;
      writeSidecar(plan, dump, path);
      await writeSnapshot(build(plan, dump), path, depth, seed + dump.rank);
      return path;
    },
    async writeWhole(rank, path) {
      const plan = plans[rank]!;
      const last = dumps.filter((dump) => dump.rank === rank).at(-1)!;
      writeSidecar(plan, last, path);
      await writeSnapshot(build(plan, { ...last, from: 0 }), path, depth, seed + rank);
    },
  };
}
