/**
 * Python stacks for a generated snapshot: the `frames` list of a trace entry, segment or block,
 * `[{name, filename, line}, …]`, innermost call first, as PyTorch's `py_symbolize` builds it.
 *
 * What PyTorch shares, and so what the pickle refers back to:
 * - **A stack** (one captured traceback) is one list object wherever it is used: an allocation's
 *   `alloc` entry, the `segment_alloc` (and any `segment_free`) it caused, and its block while it
 *   lives; a free's `free_requested` and `free_completed`. Callers name a stack by a key; the
 *   first use writes the list, later uses refer to it.
 * - **A frame** (one code location) is one dict wherever it recurs: the symbolizer caches frame
 *   dicts. `sharedFrames` is the share of frames drawn so; the rest are new dicts each time, as a
 *   writer without that cache would make, whose `filename` and `name` strings are still one object
 *   per text when `sharedStrings` holds.
 *
 * ```
 *  level 0 (outermost, 1 frame: the script) ── level 1 (a few) ── … ── level depth-1 (many)
 *  a stack walks down the levels, each frame a child of the one before, so stacks share prefixes
 * ```
 */
import { BATCH_SIZE, type PickleWriter } from '@allot/pickle';
import { Random } from '../random';
import { type InternedStrings, StringTable } from './snapshot-strings';

/** Options of {@link StackLists}. */
export interface StackOptions {
  /** Frames per stack. */
  readonly depth: number;
  /** Share of frames that are the cached frame dict of their location, in [0, 1]. */
  readonly sharedFrames: number;
  /** Whether frame strings are one object per text (else new in each new dict). */
  readonly sharedStrings: boolean;
  /** Seed of the code locations and of the stacks drawn. */
  readonly seed: number;
}

/** The keys of a frame dict, in PyTorch's order (`py_symbolize` makes them once). */
export const FRAME_KEYS = ['name', 'filename', 'line'] as const;

/** Code locations per level grow by this many per level, up to {@link MAX_LEVEL_WIDTH}. */
const LEVEL_GROWTH = 3;
/** Most code locations at one level of the call tree. */
const MAX_LEVEL_WIDTH = 96;
/** Callees a frame chooses among at the next level. */
const BRANCHING = 4;
/** Largest line number drawn. */
const MAX_LINE = 2400;

const ROOTS = [
  '/opt/conda/lib/python3.11/site-packages/torch/',
  '/opt/conda/lib/python3.11/site-packages/transformers/',
  '/opt/conda/lib/python3.11/site-packages/accelerate/',
  '/workspace/project/src/',
];
const MODULES = [
  'nn/modules/module.py',
  'nn/modules/linear.py',
  'nn/modules/normalization.py',
  'nn/functional.py',
  '_tensor.py',
  'autograd/__init__.py',
  'autograd/graph.py',
  'utils/checkpoint.py',
  'optim/adamw.py',
  'optim/optimizer.py',
  '_dynamo/eval_frame.py',
  'distributed/fsdp/fully_sharded_data_parallel.py',
  'models/llama/modeling_llama.py',
  'models/gpt2/modeling_gpt2.py',
  'trainer.py',
  'train.py',
  'data/collate.py',
  'model/attention.py',
  'model/mlp.py',
  'model/transformer_block.py',
];
const FUNCTIONS = [
  '<module>',
  'main',
  'train',
  'train_step',
  'forward',
  'backward',
  '_call_impl',
  '_wrapped_call_impl',
  'inner',
  'wrapper',
  'step',
  '_use_grad',
  'adamw',
  '_multi_tensor_adamw',
  'linear',
  'matmul',
  'softmax',
  'scaled_dot_product_attention',
  'layer_norm',
  'rms_norm',
  'apply_rotary_pos_emb',
  'checkpoint',
  'recompute_fn',
  '_engine_run_backward',
  'collate',
  'to',
  'cat',
  'zeros_like',
];

/** Code locations, level by level: a frame is a file, a function and a line. */
class CodeLocations {
  readonly filenames: string[] = [];
  readonly file: Int32Array;
  readonly name: Int32Array;
  readonly line: Int32Array;
  readonly levelStart: Int32Array;
  readonly levelWidth: Int32Array;

  constructor(depth: number, random: Random) {
    for (const root of ROOTS) for (const module of MODULES) this.filenames.push(root + module);
    this.levelStart = new Int32Array(depth);
    this.levelWidth = new Int32Array(depth);
    let total = 0;
    for (let level = 0; level < depth; level++) {
      this.levelStart[level] = total;
      this.levelWidth[level] = Math.min(1 + LEVEL_GROWTH * level, MAX_LEVEL_WIDTH);
      total += this.levelWidth[level]!;
    }
    this.file = new Int32Array(total);
    this.name = new Int32Array(total);
    this.line = new Int32Array(total);
    for (let i = 0; i < total; i++) {
      this.file[i] = random.index(this.filenames.length);
      this.name[i] = random.index(FUNCTIONS.length);
      this.line[i] = random.integer(1, MAX_LINE);
    }
    // Every stack starts where the program does: the script's top level.
    this.file[0] = this.filenames.indexOf(`${ROOTS[ROOTS.length - 1]}train.py`);
    this.name[0] = FUNCTIONS.indexOf('<module>');
  }

  get size(): number {
    return this.file.length;
  }

  /** Fills `out` with one stack's locations, innermost first. */
  draw(random: Random, out: Int32Array): void {
    const depth = out.length;
    let slot = 0;
    for (let level = 0; level < depth; level++) {
      const width = this.levelWidth[level]!;
      slot = (slot * BRANCHING + random.index(BRANCHING)) % width;
      out[depth - 1 - level] = this.levelStart[level]! + slot;
    }
  }
}

/** Writes `frames` lists, each stack once and referred to after; see the file comment. */
export class StackLists {
  private readonly locations: CodeLocations;
  private readonly random: Random;
  private readonly drawn: Int32Array;
  /** Memo index of each location's cached frame dict, -1 before its first use. */
  private readonly frameMemo: Int32Array;
  private readonly filenameMemo: Int32Array;
  private readonly nameMemo: Int32Array;
  /** Per device: memo index of each stack that will be used again, by key. */
  private readonly stored: Map<number, number>[] = [];
  private readonly keys: StringTable;
  private emptyMemo = -1;

  /** @param strings - the scope of frame strings (keys, and names when they are shared). */
  constructor(
    private readonly writer: PickleWriter,
    private readonly strings: InternedStrings,
    private readonly options: StackOptions,
  ) {
    this.keys = new StringTable(writer, strings, FRAME_KEYS);
    const random = new Random(options.seed);
    this.locations = new CodeLocations(Math.max(options.depth, 1), random);
    this.random = random;
    this.drawn = new Int32Array(options.depth);
    this.frameMemo = new Int32Array(this.locations.size).fill(-1);
    this.filenameMemo = new Int32Array(this.locations.filenames.length).fill(-1);
    this.nameMemo = new Int32Array(FUNCTIONS.length).fill(-1);
  }

  /** Distinct code locations stacks are drawn from. */
  get locationCount(): number {
    return this.locations.size;
  }

  /** Memo entries held for stacks still to be referred to. */
  get held(): number {
    return this.stored.reduce((sum, map) => sum + map.size, 0);
  }

  /**
   * Writes the stack `key` of `device`: its list the first time, a reference after. `last` says
   * no later use will come, so it is forgotten. A negative key is a stack used only here.
   */
  write(device: number, key: number, last: boolean): void {
    if (key < 0) {
      this.writeNew();
      return;
    }
    let stored = this.stored[device];
    if (stored === undefined) this.stored[device] = stored = new Map();
    const index = stored.get(key);
    if (index !== undefined) {
      this.writer.get(index);
      if (last) stored.delete(key);
      return;
    }
    const created = this.writeNew();
    if (!last) stored.set(key, created);
  }

  /** The one empty list PyTorch gives everything recorded without a stack. */
  writeEmpty(): void {
    if (this.emptyMemo >= 0) this.writer.get(this.emptyMemo);
    else this.emptyMemo = this.writer.emptyList();
  }

  private writeNew(): number {
    const writer = this.writer;
    const drawn = this.drawn;
    const depth = drawn.length;
    this.locations.draw(this.random, drawn);
    const memo = writer.emptyList();
    if (depth === 1) {
      this.frame(drawn[0]!);
      writer.appends(true);
      return memo;
    }
    for (let i = 0; i < depth; i++) {
      if (i % BATCH_SIZE === 0) writer.mark();
      this.frame(drawn[i]!);
      if (i % BATCH_SIZE === BATCH_SIZE - 1 || i === depth - 1) writer.appends(false);
    }
    return memo;
  }

  private frame(location: number): void {
    const shared = this.options.sharedFrames >= 1 || this.random.next() < this.options.sharedFrames;
    if (!shared) {
      this.frameDict(location);
      return;
    }
    const index = this.frameMemo[location]!;
    if (index >= 0) this.writer.get(index);
    else this.frameMemo[location] = this.frameDict(location);
  }

  /** `{name, filename, line}`, PyTorch's key order. */
  private frameDict(location: number): number {
    const writer = this.writer;
    const keys = this.keys;
    const memo = writer.emptyDict();
    writer.mark();
    keys.write(0);
    const name = this.locations.name[location]!;
    this.text(this.nameMemo, name, FUNCTIONS[name]!);
    keys.write(1);
    const file = this.locations.file[location]!;
    this.text(this.filenameMemo, file, this.locations.filenames[file]!);
    keys.write(2);
    writer.int(this.locations.line[location]!);
    writer.setitems(false);
    return memo;
  }

  private text(memo: Int32Array, id: number, value: string): void {
    if (!this.options.sharedStrings) {
      this.strings.fresh(value);
      return;
    }
    const index = memo[id]!;
    if (index >= 0) this.writer.get(index);
    else memo[id] = this.writer.str(value);
  }
}
