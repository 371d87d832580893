/**
 * Who holds the memory at a moment, by source line: each live block's stack reduced to what made it
 * (`stack-source.ts`: the innermost frame of the program's own code, else what the stack shows
 * instead: a library's frame, C++ on the autograd engine's thread during backward, C++ alone), the
 * blocks' bytes summed per source. It answers "which line of my code holds the memory at the peak"
 * from a snapshot recorded with `stacks="python"` (or `"all"`), as memory_viz's stack view does by
 * hand.
 */
import type { Trace } from '@allot/workloads';
import { type StackOrigin, stackSource } from './stack-source';

export { frameText, isUserFrame, userFrame } from './stack-source';

/** One source's share of the live bytes. */
export interface Holder {
  /** `name (file:line)` of the frame of your own code, or what made the blocks, in words. */
  readonly frame: string;
  /** Where the blocks' stacks lead: `code` when `frame` is a line of your own code. */
  readonly origin: StackOrigin;
  readonly bytes: number;
  /** Live blocks allocated from it. */
  readonly blocks: number;
}

/** Source lines shown. */
export const HOLDER_ROWS = 10;

/**
 * The sources holding the most of `blocks`' bytes (block ids of `trace`, each with its bytes in
 * `bytesOf`), by {@link stackSource}. Empty when the trace has no stacks.
 */
export function holdersOf(
  trace: Trace,
  blocks: readonly number[],
  bytesOf: (block: number) => number,
  rows = HOLDER_ROWS,
): Holder[] {
  const frames = trace.frames;
  if (frames === undefined || frames.size === 0) return [];
  const before = trace.start?.events ?? 0;
  const sums = new Map<string, { origin: StackOrigin; bytes: number; blocks: number }>();
  for (const block of blocks) {
    const { origin, text } = stackSource(frames.get(block), block < before);
    const sum = sums.get(text) ?? { origin, bytes: 0, blocks: 0 };
    sum.bytes += bytesOf(block);
    sum.blocks++;
    sums.set(text, sum);
  }
  return [...sums.entries()]
    .map(([frame, { origin, bytes, blocks }]) => ({ frame, origin, bytes, blocks }))
    .sort((a, b) => b.bytes - a.bytes || (a.frame < b.frame ? -1 : 1))
    .slice(0, rows);
}
