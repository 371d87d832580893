/**
 * Who holds the memory at a moment, by source line: each live block's stack reduced to its top user
 * frame (the innermost frame outside PyTorch, the standard library and C++ code), the blocks' bytes
 * summed per frame. It answers "which line of my code holds the memory at the peak" from a snapshot
 * recorded with `stacks="python"` (or `"all"`), as memory_viz's stack view does by hand.
 */
import type { StackFrame, Trace } from '@allot/workloads';

/** One source line's share of the live bytes. */
export interface Holder {
  /** `name (file:line)` of the top user frame. */
  readonly frame: string;
  readonly bytes: number;
  /** Live blocks allocated from it. */
  readonly blocks: number;
}

/** Source lines shown. */
export const HOLDER_ROWS = 10;

/**
 * Frames of PyTorch itself, installed packages, the interpreter's own, and C++ frames (a C or CUDA
 * source, `??`, or no file at all).
 */
const LIBRARY =
  /(?:site-packages|dist-packages)[\\/]|[\\/]torch[\\/]|^<|[\\/]lib[\\/]python\d|\.(?:cpp|cc|cxx|c|h|hpp|cu|cuh)$|^\?\?$|^$/;

/** Whether `frame` is the program's own code rather than a library's. */
export function isUserFrame(frame: StackFrame): boolean {
  return !LIBRARY.test(frame.filename);
}

/** The frame that stands for a stack: its innermost user frame, else its innermost frame. */
export function topUserFrame(frames: readonly StackFrame[]): StackFrame | undefined {
  return frames.find(isUserFrame) ?? frames[0];
}

/** `name (file:line)`. */
export function frameText(frame: StackFrame): string {
  return `${frame.name} (${frame.filename}:${frame.line})`;
}

/**
 * The source lines holding the most of `blocks`' bytes (block ids of `trace`, each with its bytes
 * in `bytesOf`), by top user frame, the blocks without a stack summed as `(no stack recorded)`.
 * Empty when the trace has no stacks.
 */
export function holdersOf(
  trace: Trace,
  blocks: readonly number[],
  bytesOf: (block: number) => number,
  rows = HOLDER_ROWS,
): Holder[] {
  const frames = trace.frames;
  if (frames === undefined || frames.size === 0) return [];
  const sums = new Map<string, { bytes: number; blocks: number }>();
  for (const block of blocks) {
    const stack = frames.get(block);
    const top = stack === undefined ? undefined : topUserFrame(stack);
    const key = top === undefined ? '(no stack recorded)' : frameText(top);
    const sum = sums.get(key) ?? { bytes: 0, blocks: 0 };
    sum.bytes += bytesOf(block);
    sum.blocks++;
    sums.set(key, sum);
  }
  return [...sums.entries()]
    .map(([frame, sum]) => ({ frame, ...sum }))
    .sort((a, b) => b.bytes - a.bytes || (a.frame < b.frame ? -1 : 1))
    .slice(0, rows);
}
