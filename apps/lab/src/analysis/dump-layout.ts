/**
 * The segment map's data of a state dump (`state-dump.ts` makes it, `ui/segment-map.ts` draws it):
 * every segment and its blocks as numbers, each block's state a code and what made it an index
 * into one list of texts. Imports types alone, so the page's bundle takes only these few lines.
 */
import type { DumpSegment } from '@allot/workloads';

/** A block's state in the map: a dump's three, and a run of blocks too small to draw apart. */
export const MAP_STATE = { free: 0, allocated: 1, 'pending-free': 2, mixed: 3 } as const;

/** Numbers a block takes in {@link DumpLayout}'s `blocks`. */
export const MAP_BLOCK_FIELDS = 5;

/** The segment map's data: every segment, its blocks by state and what made each. */
export interface DumpLayout {
  /**
   * Segments in address order; `blocks` holds {@link MAP_BLOCK_FIELDS} numbers a block (or a run
   * of tiny ones): offset, size, requested, state ({@link MAP_STATE}), and what made it (an index
   * into `sources`, −1 for nothing known).
   */
  readonly segments: readonly (Omit<DumpSegment, 'blocks'> & {
    readonly blocks: readonly number[];
  })[];
  /** What made the blocks (`stack-source.ts`), each text once. */
  readonly sources: readonly string[];
  /** Blocks merged into runs too small to draw apart (0: every block is drawn). */
  readonly merged: number;
}
