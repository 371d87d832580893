/**
 * Recorded stacks, each frame and each stack kept once. PyTorch shares frame dicts between trace
 * entries, and a long recording repeats the same stacks again and again, so a snapshot's stacks are
 * kept as:
 *
 * ```
 *  frames   StackFrame[]   each distinct {filename, line, name} once (interned through maps keyed
 *                          by the strings the pickle's memo already shares, so no key is built)
 *  run r    frame ids, innermost first, in a pool of blocks: starts[r], lengths[r]; a run seen
 *           before is found by its hash in an open-addressing table and stored once
 *  stack k  a run an entry used, numbered as first used: runOfStack[k]
 * ```
 *
 * so a million allocations with 60-deep stacks cost 2 bytes a frame for each distinct stack (4 once
 * there are over 65,536 distinct frames: blocks are Uint16Array until then), and nothing for a
 * repeated one. {@link StackFrames} shows a trace's stacks as the `ReadonlyMap` that
 * {@link Trace.frames} is, making each block's frames only when asked.
 */
import type { StackFrame } from '../trace';

/** Most frames kept per stack (the innermost ones). */
export const MAX_STACK_FRAMES = 64;

/** Most frame ids per block of the pool; the first blocks are smaller, each twice the last. */
const POOL_BITS = 20;
const POOL_BLOCK = 1 << POOL_BITS;
const POOL_MASK = POOL_BLOCK - 1;
const FIRST_BLOCK = 1 << 14;
/** Frame ids below this fit a Uint16Array block. */
const SHORT_IDS = 1 << 16;

/** An interned frame, as the snapshot reader hands it around: its index in the frame table. */
export class FrameRef {
  constructor(readonly id: number) {}
}

/**
 * An interned stack, standing for a `frames` list once an entry has used it: PyTorch shares one
 * list between a block of the end state and its `alloc`, and between a free's two entries.
 */
export class StackRef {
  constructor(readonly id: number) {}
}

function grow(array: Int32Array<ArrayBuffer>, need: number): Int32Array<ArrayBuffer> {
  if (need <= array.length) return array;
  const next = new Int32Array(Math.max(need, Math.ceil(array.length * 1.5)));
  next.set(array);
  return next;
}

/** The frame table and the distinct stacks. */
export class StackTable {
  readonly frames: StackFrame[] = [];
  /** The ref of each frame, by id. */
  readonly refs: FrameRef[] = [];
  private readonly stackRefs: StackRef[] = [];
  /** filename → name → line → frame. */
  private readonly frameIds = new Map<string, Map<string, Map<number, FrameRef>>>();
  /** Frame ids of the stacks, in blocks that are never copied (a stack never crosses one). */
  private readonly blocks: (Uint16Array | Int32Array)[] = [];
  /** Where the next stack goes: block << POOL_BITS | offset. */
  private poolEnd = 0;
  /** Per run: where its frame ids are, how many, their hash, and its stack (0: none yet). */
  private starts = new Int32Array(1 << 10);
  private lengths = new Int32Array(1 << 10);
  private hashes = new Int32Array(1 << 10);
  private stackOfRun = new Int32Array(1 << 10);
  /** Run + 1 per slot, 0 for an empty slot. */
  private table = new Int32Array(1 << 11);
  /** Runs, the empty one (0) included. */
  private runs = 1;
  /** The run of each stack. */
  private runOfStack = new Int32Array(1 << 10);
  /** Stacks, the empty one (id 0) included. */
  private count = 1;
  private readonly scratch = new Int32Array(MAX_STACK_FRAMES);

  /** The interned frame `{filename, line, name}`. */
  frameRef(filename: string, line: number, name: string): FrameRef {
    return this.refs[this.frameId(filename, line, name)]!;
  }

  /** The id of frame `{filename, line, name}`, interned when it is new. */
  frameId(filename: string, line: number, name: string): number {
    let byName = this.frameIds.get(filename);
    if (byName === undefined) {
      byName = new Map();
      this.frameIds.set(filename, byName);
    }
    let byLine = byName.get(name);
    if (byLine === undefined) {
      byLine = new Map();
      byName.set(name, byLine);
    }
    let ref = byLine.get(line);
    if (ref === undefined) {
      ref = new FrameRef(this.frames.length);
      this.frames.push({ filename, line, name });
      this.refs.push(ref);
      byLine.set(line, ref);
    }
    return ref.id;
  }

  /**
   * The frame id of a dict whose keys and values alternate in `pairs[0, 2 × size)` when it is a
   * frame, `{filename, line, name}` (three keys, a string filename; no name is `'?'`, no line 0),
   * interned when it is new; -1 when it is no frame.
   */
  frameIdOf(pairs: readonly unknown[], size: number): number {
    if (size !== 3) return -1;
    // Where each key's value is (the last one, should a key come twice), or -1.
    let f = -1;
    let l = -1;
    let m = -1;
    for (let i = 0; i < 6; i += 2) {
      const key = pairs[i];
      if (key === 'filename') f = i + 1;
      else if (key === 'line') l = i + 1;
      else if (key === 'name') m = i + 1;
      else return -1;
    }
    const filename = f < 0 ? undefined : pairs[f];
    if (typeof filename !== 'string') return -1;
    const line = l < 0 ? undefined : pairs[l];
    const name = m < 0 ? undefined : pairs[m];
    return this.frameId(
      filename,
      typeof line === 'number' ? line : 0,
      typeof name === 'string' ? name : '?',
    );
  }

  /** Distinct stacks (the empty stack included). */
  get size(): number {
    return this.count;
  }

  /**
   * The stack of `frames` (innermost first; items that are no {@link FrameRef} are left out), its
   * innermost {@link MAX_STACK_FRAMES} kept; 0 for an empty one.
   */
  stackOf(frames: readonly unknown[]): number {
    const ids = this.scratch;
    let n = 0;
    for (let i = 0; i < frames.length && n < MAX_STACK_FRAMES; i++) {
      const ref = frames[i];
      if (ref instanceof FrameRef) ids[n++] = ref.id;
    }
    return this.use(this.run(ids, n));
  }

  /**
   * The stack of frame ids `ids[from, from + count)` (innermost first), its innermost
   * {@link MAX_STACK_FRAMES} kept.
   */
  stackOfIds(ids: ArrayLike<number>, count = ids.length, from = 0): number {
    const scratch = this.scratch;
    const n = Math.min(count, MAX_STACK_FRAMES);
    for (let i = 0; i < n; i++) scratch[i] = ids[from + i]!;
    return this.use(this.run(scratch, n));
  }

  /**
   * The run of frame ids `ids[0, n)` (n at most {@link MAX_STACK_FRAMES}), stored once: a stack
   * seen, not yet used. {@link use} makes it the trace's stack; 0 for an empty one.
   */
  run(ids: Int32Array, n: number): number {
    if (n === 0) return 0;
    let hash = 0x811c9dc5;
    for (let i = 0; i < n; i++) hash = Math.imul(hash ^ ids[i]!, 0x01000193);
    const mask = this.table.length - 1;
    let slot = hash & mask;
    for (;;) {
      const entry = this.table[slot]!;
      if (entry === 0) break;
      const run = entry - 1;
      if (this.hashes[run] === hash && this.lengths[run] === n && this.same(run, ids, n)) {
        return run;
      }
      slot = (slot + 1) & mask;
    }
    const run = this.runs++;
    this.starts = grow(this.starts, this.runs);
    this.lengths = grow(this.lengths, this.runs);
    this.hashes = grow(this.hashes, this.runs);
    this.stackOfRun = grow(this.stackOfRun, this.runs);
    let block = this.blocks[this.blocks.length - 1];
    const wide = this.frames.length > SHORT_IDS;
    // Ids used in the last block: not `poolEnd & POOL_MASK`, which wraps to 0 once a full-size
    // block is filled to its last id.
    let at = this.poolEnd - ((this.blocks.length - 1) << POOL_BITS);
    if (block === undefined || at + n > block.length || (wide && block instanceof Uint16Array)) {
      const size = block === undefined ? FIRST_BLOCK : Math.min(2 * block.length, POOL_BLOCK);
      block = wide ? new Int32Array(size) : new Uint16Array(size);
      this.blocks.push(block);
      this.poolEnd = (this.blocks.length - 1) << POOL_BITS;
      at = 0;
    }
    for (let i = 0; i < n; i++) block[at + i] = ids[i]!;
    this.starts[run] = this.poolEnd;
    this.lengths[run] = n;
    this.hashes[run] = hash;
    this.poolEnd += n;
    this.table[slot] = run + 1;
    if (this.runs * 2 > this.table.length) this.rehash();
    return run;
  }

  /**
   * The stack of run `run` (see {@link run}): stacks are numbered as they are first used, so a run
   * seen but never used takes no number.
   */
  use(run: number): number {
    if (run === 0) return 0;
    let id = this.stackOfRun[run]!;
    if (id === 0) {
      id = this.count++;
      this.runOfStack = grow(this.runOfStack, this.count);
      this.runOfStack[id] = run;
      this.stackOfRun[run] = id;
    }
    return id;
  }

  /** The ref of stack `id`. */
  stackRef(id: number): StackRef {
    let ref = this.stackRefs[id];
    if (ref === undefined) {
      ref = new StackRef(id);
      this.stackRefs[id] = ref;
    }
    return ref;
  }

  /** The frames of stack `id`, innermost first. */
  framesOf(id: number): StackFrame[] {
    const out: StackFrame[] = [];
    const run = this.runOfStack[id]!;
    const start = this.starts[run]!;
    const block = this.blocks[start >>> POOL_BITS]!;
    const at = start & POOL_MASK;
    for (let i = 0; i < this.lengths[run]!; i++) out.push(this.frames[block[at + i]!]!);
    return out;
  }

  private same(run: number, ids: Int32Array, n: number): boolean {
    const start = this.starts[run]!;
    const block = this.blocks[start >>> POOL_BITS]!;
    const at = start & POOL_MASK;
    for (let i = 0; i < n; i++) if (block[at + i] !== ids[i]) return false;
    return true;
  }

  private rehash(): void {
    const table = new Int32Array(this.table.length * 2);
    const mask = table.length - 1;
    for (let run = 1; run < this.runs; run++) {
      let slot = this.hashes[run]! & mask;
      while (table[slot] !== 0) slot = (slot + 1) & mask;
      table[slot] = run + 1;
    }
    this.table = table;
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
