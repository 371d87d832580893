import type { Allocator } from '@allot/core';

/** What a factory gives the suite: an allocator, and optionally a way to see its bytes. */
export interface ConformanceSubject<A extends Allocator = Allocator> {
  readonly allocator: A;
  /**
   * Bytes of `[address, address + size)` when the allocator sits on host memory. With it, the suite
   * writes a distinct byte pattern into every block and verifies it when the block is freed.
   */
  readonly view?: (address: number, size: number) => Uint8Array;
}

/** Where a strategy promises to place a block; checked against `layout()` before each allocation. */
export type Placement = 'first-fit' | 'best-fit' | 'worst-fit' | 'any';

/** What the strategy promises. Each flag turns on the checks of one invariant. */
export interface Capabilities {
  /**
   * Freeing everything leaves every segment as one free block (needs `layout()`).
   * @defaultValue false
   */
  readonly coalesces?: boolean;
  /**
   * Refuses a request only when no free block in `layout()` can hold the size at the alignment.
   * @defaultValue false
   */
  readonly complete?: boolean;
  /**
   * Frees merge with free neighbours at once: after every command, no two free blocks of a
   * segment are adjacent (needs `layout()`).
   * @defaultValue false
   */
  readonly coalescesImmediately?: boolean;
  /** Placement rule checked on every successful allocation (needs `layout()`). @defaultValue 'any' */
  readonly placement?: Placement;
  /**
   * After freeing everything, a request of the initial `largestFreeBlock` bytes succeeds.
   * @defaultValue true
   */
  readonly maximalAllocation?: boolean;
  /** The same calls give the same addresses on a fresh instance. @defaultValue true */
  readonly deterministic?: boolean;
  /** Largest request size the generators make, in bytes. @defaultValue 4096 */
  readonly maxRequestSize?: number;
  /** Alignments requests may ask for (powers of two); `undefined` means "default". @defaultValue [1, 8, 64, 256] */
  readonly alignments?: readonly number[];
  /**
   * After freeing everything, `usage()` equals the usage of a fresh instance (false for pools and
   * caches that keep memory they acquired). @defaultValue true
   */
  readonly restoresInitialUsage?: boolean;
  /**
   * `layout()` accounts for free memory exactly as `usage()` does: its free blocks add up to
   * `freeBytes` and the largest equals `largestFreeBlock`. @defaultValue true
   */
  readonly layoutAccounting?: boolean;
  /** Longest command sequence per run. @defaultValue 120 */
  readonly maxCommands?: number;
}

export interface ConformanceOptions<A extends Allocator = Allocator> {
  /** Name shown in test titles and failure messages. */
  readonly name: string;
  /** Makes a fresh allocator (called many times; must not share state between calls). */
  readonly create: () => A | ConformanceSubject<A>;
  readonly capabilities?: Capabilities;
  /** Runs per property; defaults to FC_NUM_RUNS, else 100 (1,000 under ALLOT_FUZZ=1). */
  readonly numRuns?: number;
  /** fast-check seed; defaults to FC_SEED when set. */
  readonly seed?: number;
  /** fast-check replay path (printed on failure); defaults to FC_PATH when set. */
  readonly path?: string;
}

/** The invariants of DESIGN.md, by name; a `ConformanceError` says which one broke. */
export type Invariant =
  | 'bounds'
  | 'alignment'
  | 'usable-size'
  | 'no-overlap'
  | 'byte-pattern'
  | 'accounting'
  | 'restores-initial-state'
  | 'coalescing'
  | 'compaction'
  | 'completeness'
  | 'placement'
  | 'misuse'
  | 'determinism';
