/**
 * Recorded stacks, each frame kept once. PyTorch shares frame dicts between trace entries, and a
 * long recording repeats the same stacks again and again, so a snapshot's stacks are kept as:
 *
 * ```
 *  frames     StackFrame[]   each distinct {filename, line, name} once (interned)
 *  stack k    a node of a prefix tree from the outermost frame in: parent[k], frame[k]
 *             (node 0 is the empty stack); walking up from k gives the frames innermost first
 * ```
 *
 * so a million allocations with 60-deep stacks cost a few bytes each beyond their distinct paths.
 * {@link StackFrames} shows a trace's stacks as the `ReadonlyMap` that {@link Trace.frames} is,
 * making each block's frames only when asked.
 */
import type { StackFrame } from '../trace';

/** Most frames kept per stack (the innermost ones). */
export const MAX_STACK_FRAMES = 64;

/** An interned frame, as the snapshot reader hands it around: its index in the frame table. */
export class FrameRef {
  constructor(readonly id: number) {}
}

function grow(array: Int32Array<ArrayBuffer>, need: number): Int32Array<ArrayBuffer> {
  if (need <= array.length) return array;
  const next = new Int32Array(Math.max(need, array.length * 2));
  next.set(array);
  return next;
}

/** The frame table and the prefix tree of stacks. */
export class StackTable {
  readonly frames: StackFrame[] = [];
  private readonly frameIds = new Map<string, FrameRef>();
  private parent = new Int32Array(1024);
  private frame = new Int32Array(1024);
  private nodes = 1;
  private readonly children = new Map<number, number>();

  /** The interned frame `{filename, line, name}`. */
  frameRef(filename: string, line: number, name: string): FrameRef {
    const key = `${line}\u0000${filename}\u0000${name}`;
    let ref = this.frameIds.get(key);
    if (ref === undefined) {
      ref = new FrameRef(this.frames.length);
      this.frames.push({ filename, line, name });
      this.frameIds.set(key, ref);
    }
    return ref;
  }

  /** Distinct stacks (prefix-tree nodes, the empty stack included). */
  get size(): number {
    return this.nodes;
  }

  /**
   * The stack of `frames` (innermost first; items that are no {@link FrameRef} are left out), at
   * most {@link MAX_STACK_FRAMES} deep; 0 for an empty one.
   */
  stackOf(frames: readonly unknown[]): number {
    let node = 0;
    for (let i = Math.min(frames.length, MAX_STACK_FRAMES) - 1; i >= 0; i--) {
      const ref = frames[i];
      if (!(ref instanceof FrameRef)) continue;
      const key = node * 0x1000000 + ref.id;
      let child = this.children.get(key);
      if (child === undefined) {
        child = this.nodes++;
        this.parent = grow(this.parent, this.nodes);
        this.frame = grow(this.frame, this.nodes);
        this.parent[child] = node;
        this.frame[child] = ref.id;
        this.children.set(key, child);
      }
      node = child;
    }
    return node;
  }

  /** The frames of stack `node`, innermost first. */
  framesOf(node: number): StackFrame[] {
    const out: StackFrame[] = [];
    for (let at = node; at > 0; at = this.parent[at]!) out.push(this.frames[this.frame[at]!]!);
    return out;
  }
}

/** A trace's stacks by block id, made when asked (see the module comment). */
export class StackFrames implements ReadonlyMap<number, readonly StackFrame[]> {
  private readonly made = new Map<number, readonly StackFrame[]>();
  readonly size: number;

  /** `stackOf[block]` is the block's stack in `table`, 0 for none. */
  constructor(
    private readonly table: StackTable,
    private readonly stackOf: Int32Array,
  ) {
    let size = 0;
    for (let i = 0; i < stackOf.length; i++) if (stackOf[i]! > 0) size++;
    this.size = size;
  }

  get(block: number): readonly StackFrame[] | undefined {
    const node = this.stackOf[block];
    if (node === undefined || node <= 0) return undefined;
    let frames = this.made.get(node);
    if (frames === undefined) {
      frames = this.table.framesOf(node);
      this.made.set(node, frames);
    }
    return frames;
  }

  has(block: number): boolean {
    return (this.stackOf[block] ?? 0) > 0;
  }

  *entries(): MapIterator<[number, readonly StackFrame[]]> {
    for (let block = 0; block < this.stackOf.length; block++) {
      if (this.stackOf[block]! > 0) yield [block, this.get(block)!];
    }
  }

  *keys(): MapIterator<number> {
    for (const [block] of this.entries()) yield block;
  }

  *values(): MapIterator<readonly StackFrame[]> {
    for (const [, frames] of this.entries()) yield frames;
  }

  [Symbol.iterator](): MapIterator<[number, readonly StackFrame[]]> {
    return this.entries();
  }

  forEach(
    callback: (
      value: readonly StackFrame[],
      key: number,
      map: ReadonlyMap<number, readonly StackFrame[]>,
    ) => void,
  ): void {
    for (const [block, frames] of this.entries()) callback(frames, block, this);
  }
}
