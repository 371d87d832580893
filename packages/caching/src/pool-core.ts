/**
 * The state every part of the caching pool works on, in one object of a fixed shape: the block
 * store, the segments, the owners and their free-block indices, the pending frees, the knobs. The
 * modules beside this one are plain functions that take it as their first argument, so a call on the
 * hot path is a direct, monomorphic call with no closure and no dispatch; `CachingPool` holds one
 * and is the public face.
 */
import { AddressMap, type OrderedIndex } from '@allot/blocks';
import { InvalidArgumentError, type MemorySource } from '@allot/core';
import type { StatsSink } from '@allot/stats';
import { type AllocatorSettings, allocConfFromEnv, parseAllocConf } from './alloc-conf';
import { BlockStore } from './block-store';
import { formatAllocConf } from './format-alloc-conf';
import { PoolCounters } from './pool-counters';
import { PoolOwner, type Segment } from './pool-owner';
import { isStreamOrderedSource, type Stream, type StreamEvents } from './stream-source';

/** Options of {@link cachingPool}. */
export interface CachingPoolOptions {
  /** Where segments come from. */
  readonly source: MemorySource;
  /**
   * Knobs in `PYTORCH_CUDA_ALLOC_CONF` syntax, for example
   * `"max_split_size_mb:128,roundup_power2_divisions:[256:1,512:2,>:8],expandable_segments:True"`.
   * When absent, the `ALLOT_ALLOC_CONF` environment variable is read (at creation, not at import).
   * @defaultValue process.env.ALLOT_ALLOC_CONF ?? ''
   */
  readonly config?: string;
  /**
   * The knobs as typed settings (from `parseAllocConf`, or built in code); takes precedence over
   * `config`, and the pool's `config` becomes `formatAllocConf(settings)`.
   */
  readonly settings?: AllocatorSettings;
  /** Environment read when neither `settings` nor `config` is given. @defaultValue process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Total bytes of the memory behind the source (a GPU's memory): the base of the memory fraction
   * and the "total capacity" of the out-of-memory message.
   * @defaultValue Infinity (not stated)
   */
  readonly totalMemory?: number;
  /**
   * Fraction [0, 1] of `totalMemory` the pool may reserve, like
   * `torch.cuda.set_per_process_memory_fraction`; overrides `per_process_memory_fraction`. Needs
   * `totalMemory`. Garbage collection (`garbage_collection_threshold`) runs only under a fraction.
   * @defaultValue no cap
   */
  readonly memoryFraction?: number;
  /**
   * Segments entirely free for this many milliseconds go back to the source (checked when a segment
   * becomes free, on cache misses and by {@link CachingPool.decay}). Absent: never.
   * @defaultValue undefined
   */
  readonly decayMs?: number;
  /** Clock for `decayMs`, in milliseconds. @defaultValue performance.now */
  readonly clock?: () => number;
}

/**
 * Called on a cache miss before anything is released; returns whether it freed memory of this pool
 * (then the search is retried). PyTorch's `FreeMemoryCallback`.
 */
export type FreeMemoryCallback = (request: {
  readonly size: number;
  readonly stream: Stream;
}) => boolean;

/** A stream event recorded for a pending free. */
export interface PendingEvent {
  readonly event: unknown;
  readonly slot: number;
}

/** What a failed request looked like, for the error built after it. */
export interface Failure {
  readonly size: number;
  readonly alignment: number;
  readonly allocationSize: number;
}

/**
 * Where the hot cycle (`parked-free.ts`) stands with its figures. `Eager`: every call counts them.
 * `Armed`: counted eagerly too, until the same request takes the block back a second time, which
 * makes it `Mark` (a block taken once and then left, as when sizes take turns, is not worth
 * measuring). `Mark`: the next free starts measuring one cycle (free and allocation), `Measure`: the
 * next allocation ends it. `Counted`: calls count repeats only; cooling the cycle adds their
 * cumulative increases, and the free's own figures when the block is parked.
 */
export const HotPhase = { Eager: 0, Armed: 1, Mark: 2, Measure: 3, Counted: 4 } as const;
export type HotPhase = (typeof HotPhase)[keyof typeof HotPhase];

/** "No cap" for the memory fraction and `max_split_size`. */
export const NO_CAP = Number.POSITIVE_INFINITY;

export class PoolCore {
  readonly source: MemorySource;
  /** The knobs in force. */
  readonly settings: AllocatorSettings;
  /** The configuration string they came from. */
  readonly config: string;
  /** Total bytes behind the source; `Infinity` when not stated. */
  readonly totalMemory: number;

  readonly blocks = new BlockStore();
  /** Address → slot of every allocated block (the shared table of `@allot/blocks`, keyed by address). */
  readonly live = new AddressMap(1024);
  /** Segments by id; `undefined` for a released id (on {@link spareSegmentIds}). */
  readonly segments: (Segment | undefined)[] = [];
  readonly spareSegmentIds: number[] = [];
  /** Figures of the whole pool (private pools keep their own as well). */
  readonly counters = new PoolCounters();
  /** The pool's own segments and free blocks. */
  readonly main = new PoolOwner(0, null);
  /** Where allocations go now: {@link main}, or a private pool in scope. */
  target: PoolOwner = this.main;
  readonly privatePools = new Set<PoolOwner>();
  nextPrivateId = 1;
  /** The source's stream hooks, when it has them. */
  readonly events: StreamEvents | null;
  /** Per stream, events recorded for pending frees, oldest first. */
  readonly pending = new Map<Stream, PendingEvent[]>();
  pendingCount = 0;
  /** Slot → streams (other than its own) that used the block. */
  readonly streamUses = new Map<number, Stream[]>();
  readonly sinks: StatsSink[] = [];
  readonly callbacks: FreeMemoryCallback[] = [];
  /** Expandable segment per stream, for the small and the large pool. */
  readonly expandableSmall = new Map<Stream, Segment>();
  readonly expandableLarge = new Map<Stream, Segment>();
  readonly maxSplitSize: number;
  readonly maxNonSplitRounding: number;
  readonly divisions: readonly number[];
  /** Whether every interval rounds to 512 B steps (no divisions apply). */
  readonly plainRounding: boolean;
  /** Whether segments grow in place (the knob, and a source that can `grow`). */
  readonly expandable: boolean;
  /** Bytes the pool may reserve; {@link NO_CAP} without a memory fraction. */
  allowedMemory: number = NO_CAP;
  readonly decayMs: number | undefined;
  readonly clock: () => number;
  /** Entirely free segments, in the order they became so (only with `decayMs`). */
  readonly idle: Set<Segment> | null;
  lastFailure: Failure | null = null;
  /** Whether free-block searches are counted (the clock of garbage-collection ages). */
  readonly countSearches: boolean;
  /** The index `findFreeBlock` found its block in. */
  foundIn: OrderedIndex | null = null;
  /** The freed block whose merge is put off (`parked-free.ts`), or NIL. */
  parked = -1;
  /**
   * The block of the hot cycle (`parked-free.ts`): taken back from park by the last call to the pool
   * (or parked again by it), so that its free, or the same request again, repeats that call's
   * checks; NIL when the last call did anything else. Its address-table entry stays while parked.
   */
  hot = -1;
  /** How the hot cycle's figures are kept. */
  hotPhase: HotPhase = HotPhase.Eager;
  /** Cycles since {@link hotPhase} became `Counted`, their figures not yet added. */
  hotCycles = 0;

  constructor(options: CachingPoolOptions) {
    if (typeof options?.source?.acquire !== 'function') {
      throw new InvalidArgumentError('source', options?.source, 'a MemorySource');
    }
    this.source = options.source;
    if (options.settings !== undefined) {
      this.settings = parseAllocConf(formatAllocConf(options.settings));
      this.config = formatAllocConf(this.settings);
    } else {
      this.config = options.config ?? allocConfFromEnv(options.env);
      this.settings = parseAllocConf(this.config);
    }
    this.totalMemory = options.totalMemory ?? NO_CAP;
    if (
      this.totalMemory !== NO_CAP &&
      !(Number.isSafeInteger(this.totalMemory) && this.totalMemory > 0)
    ) {
      throw new InvalidArgumentError(
        'totalMemory',
        this.totalMemory,
        'a positive safe integer of bytes',
      );
    }
    this.maxSplitSize = this.settings.maxSplitSize;
    this.maxNonSplitRounding = this.settings.maxNonSplitRounding;
    this.divisions = this.settings.roundupPower2Divisions;
    this.plainRounding = this.divisions.every((d) => d <= 1);
    this.expandable = this.settings.expandableSegments && typeof this.source.grow === 'function';
    this.countSearches = this.settings.garbageCollectionThreshold > 0;
    this.events = isStreamOrderedSource(this.source) ? this.source : null;
    const fraction = options.memoryFraction ?? this.settings.memoryFraction;
    if (fraction !== undefined) this.setMemoryFraction(fraction);
    if (options.decayMs !== undefined) {
      if (!(options.decayMs >= 0) || !Number.isFinite(options.decayMs)) {
        throw new InvalidArgumentError(
          'decayMs',
          options.decayMs,
          'a non-negative number of milliseconds',
        );
      }
    }
    this.decayMs = options.decayMs;
    this.clock = options.clock ?? (() => performance.now());
    this.idle = this.decayMs === undefined ? null : new Set();
  }

  /**
   * Caps reserved bytes at `fraction` × `totalMemory`. A fraction of 0 is allowed, as in PyTorch's
   * `set_per_process_memory_fraction`: the pool may then reserve nothing.
   */
  setMemoryFraction(fraction: number): void {
    if (!(fraction >= 0 && fraction <= 1)) {
      throw new InvalidArgumentError('memoryFraction', fraction, 'a number in [0, 1]');
    }
    if (this.totalMemory === NO_CAP) {
      throw new InvalidArgumentError('memoryFraction', fraction, 'a pool created with totalMemory');
    }
    this.allowedMemory = Math.floor(fraction * this.totalMemory);
  }

  /** Owners of segments: the pool and its private pools. */
  owners(): PoolOwner[] {
    return [this.main, ...this.privatePools];
  }
}
