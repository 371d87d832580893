/**
 * One rank's timeline, merged from its successive ring-buffer dumps as they land, and replayed as
 * it grows: under the settings the rank recorded, and under each setting the job's advice is
 * chosen from.
 *
 * ```
 *  dump k ─► where does dump k−1's last entry lie in it? (its last TAIL entries, matched whole)
 *            found at j: entries after j are new ─► a piece: those entries, starting from the pool
 *                        as the dump's end state and those entries say it was at j; its live blocks
 *                        must be those the timeline ends with (else: the dumps disagree, a break)
 *            not found:  the window does not reach back to dump k−1: a gap; the timeline starts
 *                        again from the whole dump, its starting state rebuilt from it
 *  piece ─► every ContinuedPool goes on with it ─► peaks, failures; PyTorch's own peak in it
 * ```
 *
 * No entry is counted twice: each piece holds only what no earlier dump held. Across a gap the
 * pools start again from PyTorch's state at the new window's start (each setting's own state
 * before it is unknown), and the peaks are those of the pieces on either side.
 */
import { parseAllocConf } from '@allot/caching';
import { EventKind, type Trace } from '@allot/workloads';
import { type DeviceModel, UNLIMITED_DEVICE } from '../analysis/device';
import type { SettingFigures } from '../job/advice';
import { canonicalConf } from '../job/candidates';
import { ContinuedPool, type RecordedAddresses } from './continued-pool';
import { ACTION, chunkTrace, type Dump, type DumpEntries, sameRecord } from './dump-entries';

/** Entries of a dump's end kept to find it again in the next dump. */
const TAIL = 64;
/** How far back of their order entries' times may read, from one snapshot's conversion to the next. */
const TIME_SLACK_US = 2;

/** How one dump joined the timeline. */
export interface Joined {
  /** Entries the dump adds to the timeline. */
  readonly newEntries: number;
  /** Entries it shares with the dump before it. */
  readonly overlapEntries: number;
  /** Why the timeline breaks before this dump, or null when it goes on without one. */
  readonly gap: string | null;
  /** PyTorch's own peak reserved bytes within the entries the dump adds, or null for none. */
  readonly recordedPeakBytes: number | null;
}

/** The last entries of a dump, copied. */
interface Tail {
  readonly entries: DumpEntries;
}

function tailOf(entries: DumpEntries): Tail {
  const from = Math.max(0, entries.length - TAIL);
  const deviceFree = new Map<number, number>();
  for (const [i, bytes] of entries.deviceFree) if (i >= from) deviceFree.set(i - from, bytes);
  return {
    entries: {
      length: entries.length - from,
      action: entries.action.slice(from),
      addr: entries.addr.slice(from),
      size: entries.size.slice(from),
      stream: entries.stream.slice(from),
      time: entries.time.slice(from),
      deviceFree,
    },
  };
}

/**
 * The index in `entries` just past the previous dump's last entry (its tail found there, every
 * entry of it that the window holds), or -1 when the window does not reach back to it.
 *
 * Entries match on what they record (action, address, size, stream, `device_free`), not on their
 * times: PyTorch turns each entry's clock reading into `time_us` again at every snapshot, with a
 * scale it measures then, so the same entry reads a microsecond apart in two dumps taken seconds
 * apart, and further apart on a host whose clock is slewed over a long job. Where the tail occurs
 * more than once (a loop that allocates alike at the same addresses), the match nearest the tail's
 * own time wins; without times, the latest, so that no entry is taken as new that an earlier dump
 * may have held.
 */
export function joinPoint(tail: DumpEntries, entries: DumpEntries): number {
  const last = tail.length - 1;
  const at = tail.time[last]!;
  let best = -1;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (let j = entries.length - 1; j >= 0; j--) {
    const distance = Math.abs(entries.time[j]! - at);
    // Times grow along the entries (to within the microsecond of each snapshot's conversion), so
    // no match further back can be nearer.
    if (entries.time[j]! < at - bestDistance - TIME_SLACK_US) break;
    if (!sameRecord(tail, last, entries, j)) continue;
    const shared = Math.min(tail.length, j + 1);
    let k = 1;
    while (k < shared && sameRecord(tail, last - k, entries, j - k)) k++;
    if (k < shared) continue;
    if (Number.isNaN(distance)) return j + 1;
    if (distance < bestDistance) {
      best = j + 1;
      bestDistance = distance;
    }
  }
  return best;
}

/** Each block's device address in `piece`, whose entries are `entries` from `from` on. */
function recordedAddresses(piece: Trace, entries: DumpEntries, from: number): RecordedAddresses {
  const addresses = new Float64Array(piece.allocCount).fill(Number.NaN);
  for (const segment of piece.start?.segments ?? []) {
    for (const block of segment.blocks) addresses[block.id] = segment.address + block.offset;
  }
  const location = piece.location;
  if (location === undefined) return addresses;
  for (let i = piece.start?.events ?? 0; i < piece.length; i++) {
    if (piece.kind[i] !== EventKind.Alloc) continue;
    addresses[piece.id[i]!] = entries.addr[from + location[i]! - 1]!;
  }
  return addresses;
}

/** Device addresses of the blocks live at the end of `piece`. */
function liveAtEnd(piece: Trace, addresses: RecordedAddresses): Set<number> {
  const live = new Uint8Array(piece.allocCount);
  for (let i = 0; i < piece.length; i++)
    live[piece.id[i]!] = piece.kind[i] === EventKind.Alloc ? 1 : 0;
  const out = new Set<number>();
  for (let id = 0; id < live.length; id++) if (live[id] === 1) out.add(addresses[id]!);
  return out;
}

/** Why `piece` cannot go on from a timeline whose live blocks are `live`, or null when it can. */
function mismatch(
  piece: Trace,
  addresses: RecordedAddresses,
  live: ReadonlySet<number>,
): string | null {
  if (piece.start === undefined)
    return `its starting state cannot be rebuilt (${piece.meta.startState})`;
  let count = 0;
  for (let id = 0; id < piece.start.events; id++) {
    if (!live.has(addresses[id]!)) {
      return `a block live at its start (0x${addresses[id]!.toString(16)}) is not live in the timeline`;
    }
    count++;
  }
  return count === live.size
    ? null
    : `${live.size - count} blocks live in the timeline are not live at its start`;
}

function number(trace: Trace, key: string): number | null {
  const value = trace.meta[key];
  return typeof value === 'number' ? value : null;
}

/** A rank's merged timeline and its replays (see the module comment). */
export class RankTimeline {
  private tail: Tail | null = null;
  private live = new Set<number>();
  /** The recorded settings' pool, then one per candidate (shared where a candidate is the same). */
  private pools: ContinuedPool[] = [];
  /** Figures of the spans before the last gap, per setting. */
  private before: SettingFigures[] = [];
  /** PyTorch's peak reserved bytes over the timeline, as recorded. */
  recordedPeakReservedBytes = 0;
  /** The recorded settings (`PYTORCH_CUDA_ALLOC_CONF`), or null when the recording states none. */
  recordedConf: string | null = null;
  /** Entries merged so far. */
  entries = 0;
  /** Out-of-memory errors the timeline recorded (`oom` entries; `memory_stats()`'s `num_ooms`). */
  ooms = 0;
  /** Breaks in the timeline, each a short reason. */
  readonly gaps: string[] = [];

  /**
   * @param candidates - settings to replay besides the recorded ones, canonical.
   * @param device - the device the candidates are replayed on.
   */
  constructor(
    readonly candidates: readonly string[],
    readonly device: DeviceModel,
  ) {}

  /** Merges `dump` (named `name`), replays what it adds; `breathe` lets the event loop turn. */
  async add(dump: Dump, name: string, breathe: () => Promise<void>): Promise<Joined> {
    const entries = dump.entries;
    let from = 0;
    let gap: string | null = null;
    if (this.tail !== null) {
      from = joinPoint(this.tail.entries, entries);
      if (from < 0) gap = "the dump's window does not reach back to the dump before it";
    }
    const overlap = this.tail === null || from < 0 ? 0 : from;
    this.tail = tailOf(entries);
    for (let i = Math.max(0, from); i < entries.length; i++) {
      if (entries.action[i] === ACTION.oom) this.ooms++;
    }
    if (this.pools.length > 0 && gap === null) {
      const added = { newEntries: entries.length - from, overlapEntries: overlap, gap: null };
      const piece = from < entries.length ? chunkTrace(dump, from, name) : null;
      if (piece === null) {
        this.entries += added.newEntries;
        return { ...added, recordedPeakBytes: null };
      }
      const addresses = recordedAddresses(piece, entries, from);
      const why = mismatch(piece, addresses, this.live);
      if (why === null) {
        for (const pool of new Set(this.pools)) {
          await breathe();
          pool.continue(piece, addresses);
        }
        this.live = liveAtEnd(piece, addresses);
        this.entries += added.newEntries;
        return { ...added, recordedPeakBytes: this.recordPeak(piece) };
      }
      gap = `the dumps disagree where they join: ${why}`;
    }
    if (gap !== null) this.gaps.push(gap);
    await this.start(dump, breathe);
    this.entries += entries.length;
    return {
      newEntries: entries.length,
      overlapEntries: overlap,
      gap,
      recordedPeakBytes: this.recordPeak(dump.trace),
    };
  }

  /** Starts the pools again from the whole of `dump`. */
  private async start(dump: Dump, breathe: () => Promise<void>): Promise<void> {
    if (this.pools.length > 0) this.before = this.figures();
    const trace = dump.trace;
    const conf = trace.meta.torchAllocConf;
    this.recordedConf = typeof conf === 'string' ? conf : null;
    const recorded = canonicalConf(this.recordedConf ?? '') ?? '';
    const addresses = recordedAddresses(trace, dump.entries, 0);
    const pools: ContinuedPool[] = [];
    const byConfig = new Map<string, ContinuedPool>();
    for (const [i, config] of [recorded, ...this.candidates].entries()) {
      const device = i === 0 ? UNLIMITED_DEVICE : this.device;
      const key = `${config}\n${JSON.stringify(device)}`;
      let pool = byConfig.get(key);
      if (pool === undefined) {
        await breathe();
        pool = new ContinuedPool(parseAllocConf(config), trace, addresses, device);
        byConfig.set(key, pool);
      }
      pools.push(pool);
    }
    this.pools = pools;
    this.live = liveAtEnd(trace, addresses);
  }

  /** Takes in PyTorch's peak within `piece`, and returns it. */
  private recordPeak(piece: Trace): number | null {
    const peak = number(piece, 'torchPeakReservedBytes');
    if (peak !== null && peak > this.recordedPeakReservedBytes)
      this.recordedPeakReservedBytes = peak;
    return peak;
  }

  /** Per setting, recorded first then the candidates in order: the timeline's figures so far. */
  figures(): SettingFigures[] {
    return this.pools.map((pool, i) => {
      const earlier = this.before[i];
      const segments = pool.segments;
      const now: SettingFigures = {
        config: pool.config,
        peakReservedBytes: pool.peakReservedBytes,
        failures: pool.failures,
        segmentCalls: segments.acquired + segments.grown,
      };
      if (earlier === undefined) return now;
      return {
        config: now.config,
        peakReservedBytes: Math.max(now.peakReservedBytes, earlier.peakReservedBytes),
        failures: now.failures + earlier.failures,
        segmentCalls: now.segmentCalls + earlier.segmentCalls,
      };
    });
  }

  /** Peak live bytes of the recorded settings' replay so far. */
  get peakLiveBytes(): number {
    return this.pools[0]?.peakLiveBytes ?? 0;
  }
}
