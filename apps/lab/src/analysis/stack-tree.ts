/**
 * Who holds the memory at a moment, by call stack: the live blocks' stacks merged into one call
 * tree from the outermost frame in, each node the bytes and blocks of the stacks that pass through
 * it, as memory_viz's and ptmem's stack views show them. The flat list of source lines
 * (`holders.ts`) is its summary: each block's stack reduced to one frame.
 *
 * ```
 *  live blocks ─► grouped by stack (a recording keeps each distinct stack once) ─► a trie of the
 *  distinct stacks, outermost frame first, bytes and blocks summed per node ─► the largest
 *  MAX_STACK_NODES nodes of at least MIN_STACK_SHARE of the bytes listed; the rest summed per parent
 * ```
 *
 * Frames are told apart by their text, `name (file:line)`: two stacks that pass through the same
 * line of the same function share a node. Bytes are the bytes requested, as everywhere else a
 * block's live bytes are counted.
 */
import { EventKind, type StackFrame, type Trace } from '@allot/workloads';
import { frameText } from './holders';
import { textTable } from './text-table';

/** Nodes a tree lists at most; the smaller ones are summed into their parent's `other`. */
export const MAX_STACK_NODES = 2000;
/** The least share of the live bytes a listed node holds (0.1 %): below it, a node is summed. */
export const MIN_STACK_SHARE = 0.001;

/** Bytes and blocks, summed. */
export interface StackSum {
  readonly bytes: number;
  readonly blocks: number;
}

/** One frame of the call tree: the blocks whose stacks pass through it, from its callers. */
export interface StackNode extends StackSum {
  /** `name (file:line)`. */
  readonly frame: string;
  /** Bytes of the blocks allocated in this frame itself (the innermost frame of their stack). */
  readonly selfBytes: number;
  /** Its callees that are listed, the most bytes first. */
  readonly children: readonly StackNode[];
  /** Its callees too small to list, summed, and how many call paths they are (absent: none). */
  readonly other?: StackSum & { readonly paths: number };
}

/** The live blocks of one moment as a call tree (see the module comment). */
export interface StackTree extends StackSum {
  /** The outermost frames of the stacks, listed, the most bytes first. */
  readonly children: readonly StackNode[];
  /** Outermost frames too small to list, summed (absent: none). */
  readonly other?: StackSum & { readonly paths: number };
  /** Blocks whose allocation recorded no stack (absent: none). */
  readonly unrecorded?: StackSum;
  /** Nodes listed, and nodes summed into an `other`. */
  readonly nodes: number;
  readonly summedNodes: number;
  /** The least bytes a listed node holds: `MIN_STACK_SHARE` of the bytes, or more past `MAX_STACK_NODES`. */
  readonly minBytes: number;
}

/** Options of {@link stackTreeOf}. */
export interface StackTreeOptions {
  /** @defaultValue {@link MAX_STACK_NODES} */
  readonly maxNodes?: number;
  /** @defaultValue {@link MIN_STACK_SHARE} */
  readonly minShare?: number;
}

/** Growable columns of the trie's nodes; node 0 is the root. */
class Trie {
  parent: number[] = [-1];
  frame: number[] = [-1];
  bytes: number[] = [0];
  blocks: number[] = [0];
  self: number[] = [0];
  /** `parent * frameCount + frame` → child. */
  private readonly edges = new Map<number, number>();

  constructor(private readonly frameCount: number) {}

  child(parent: number, frame: number): number {
    const key = parent * this.frameCount + frame;
    let node = this.edges.get(key);
    if (node === undefined) {
      node = this.parent.length;
      this.edges.set(key, node);
      this.parent.push(parent);
      this.frame.push(frame);
      this.bytes.push(0);
      this.blocks.push(0);
      this.self.push(0);
    }
    return node;
  }
}

/**
 * The call tree of `blocks` (block ids of `trace`, each of `bytesOf(block)` bytes), or null when
 * the trace recorded no stacks.
 */
export function stackTreeOf(
  trace: Trace,
  blocks: Iterable<number>,
  bytesOf: (block: number) => number,
  options: StackTreeOptions = {},
): StackTree | null {
  const frames = trace.frames;
  if (frames === undefined || frames.size === 0) return null;
  // The blocks by stack: a recording keeps each distinct stack as one list.
  const stacks = new Map<readonly StackFrame[], { bytes: number; blocks: number }>();
  let unrecordedBytes = 0;
  let unrecordedBlocks = 0;
  for (const block of blocks) {
    const bytes = bytesOf(block);
    const stack = frames.get(block);
    if (stack === undefined || stack.length === 0) {
      unrecordedBytes += bytes;
      unrecordedBlocks++;
      continue;
    }
    const sum = stacks.get(stack);
    if (sum === undefined) stacks.set(stack, { bytes, blocks: 1 });
    else {
      sum.bytes += bytes;
      sum.blocks++;
    }
  }
  // Each frame's text once, numbered.
  const { list: texts, index } = textTable();
  const byFrame = new Map<StackFrame, number>();
  for (const stack of stacks.keys()) {
    for (const frame of stack) if (!byFrame.has(frame)) byFrame.set(frame, index(frameText(frame)));
  }
  const trie = new Trie(Math.max(1, texts.length));
  for (const [stack, sum] of stacks) {
    let node = 0;
    trie.bytes[0]! += sum.bytes;
    trie.blocks[0]! += sum.blocks;
    for (let f = stack.length - 1; f >= 0; f--) {
      node = trie.child(node, byFrame.get(stack[f]!)!);
      trie.bytes[node]! += sum.bytes;
      trie.blocks[node]! += sum.blocks;
    }
    trie.self[node]! += sum.bytes;
  }
  return listed(trie, texts, { bytes: unrecordedBytes, blocks: unrecordedBlocks }, options);
}

/** The trie as a tree of its largest nodes, the rest summed per parent. */
function listed(
  trie: Trie,
  texts: readonly string[],
  unrecorded: StackSum,
  { maxNodes = MAX_STACK_NODES, minShare = MIN_STACK_SHARE }: StackTreeOptions,
): StackTree {
  const total = trie.bytes[0]! + unrecorded.bytes;
  const count = trie.parent.length;
  let minBytes = Math.max(1, Math.ceil(total * minShare));
  // The largest nodes first; a parent holds at least its child's bytes and was made before it, so
  // it comes first and every listed node's parent is listed.
  const order: number[] = [];
  for (let node = 1; node < count; node++) if (trie.bytes[node]! >= minBytes) order.push(node);
  order.sort((a, b) => trie.bytes[b]! - trie.bytes[a]! || a - b);
  if (order.length > maxNodes) {
    order.length = maxNodes;
    minBytes = trie.bytes[order[maxNodes - 1]!]!;
  }
  const kept = new Uint8Array(count);
  kept[0] = 1;
  for (const node of order) kept[node] = 1;
  const children: number[][] = Array.from({ length: count }, () => []);
  const other: { bytes: number; blocks: number; paths: number }[] = [];
  for (let node = 1; node < count; node++) {
    const parent = trie.parent[node]!;
    if (!kept[parent]) continue;
    if (kept[node]) children[parent]!.push(node);
    else {
      const sum = (other[parent] ??= { bytes: 0, blocks: 0, paths: 0 });
      sum.bytes += trie.bytes[node]!;
      sum.blocks += trie.blocks[node]!;
      sum.paths++;
    }
  }
  const byBytes = (a: number, b: number) =>
    trie.bytes[b]! - trie.bytes[a]! || (texts[trie.frame[a]!]! < texts[trie.frame[b]!]! ? -1 : 1);
  const nodeOf = (node: number): StackNode => ({
    frame: texts[trie.frame[node]!]!,
    bytes: trie.bytes[node]!,
    blocks: trie.blocks[node]!,
    selfBytes: trie.self[node]!,
    children: children[node]!.sort(byBytes).map(nodeOf),
    ...(other[node] ? { other: other[node] } : {}),
  });
  const summed = count - 1 - order.length;
  return {
    bytes: total,
    blocks: trie.blocks[0]! + unrecorded.blocks,
    children: children[0]!.sort(byBytes).map(nodeOf),
    ...(other[0] ? { other: other[0] } : {}),
    ...(unrecorded.blocks > 0 ? { unrecorded } : {}),
    nodes: order.length,
    summedNodes: summed,
    minBytes,
  };
}

/**
 * The blocks of `trace` live just after event `event` (allocated at or before it, not freed by
 * then) and the bytes each asked for.
 */
export function liveBlocksAt(
  trace: Trace,
  event: number,
): { readonly blocks: number[]; readonly bytes: Float64Array } {
  const bytes = new Float64Array(trace.allocCount);
  const live = new Uint8Array(trace.allocCount);
  const last = Math.min(trace.length - 1, event);
  const { kind, id, size } = trace;
  for (let i = 0; i <= last; i++) {
    const block = id[i]!;
    if (kind[i] === EventKind.Alloc) {
      live[block] = 1;
      bytes[block] = size[i]!;
    } else live[block] = 0;
  }
  const blocks: number[] = [];
  for (let block = 0; block < live.length; block++) if (live[block]) blocks.push(block);
  return { blocks, bytes };
}

/** The call tree of the blocks live just after event `event`, or null without stacks. */
export function stackTreeAt(
  trace: Trace,
  event: number,
  options: StackTreeOptions = {},
): StackTree | null {
  if (trace.frames === undefined || trace.frames.size === 0) return null;
  const { blocks, bytes } = liveBlocksAt(trace, event);
  return stackTreeOf(trace, blocks, (block) => bytes[block]!, options);
}
