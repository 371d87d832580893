/**
 * The dicts of a PyTorch memory snapshot, written as `torch.cuda.memory._dump_snapshot()` pickles
 * them: PyTorch's key order (`THCPModule_memorySnapshot`), its shared objects (see
 * snapshot-strings.ts and stack-lists.ts) and CPython's opcodes (`@allot/pickle`'s writer).
 *
 * ```
 *  {segments: [{device, address, total_size, allocated_size, active_size, requested_size, stream,
 *               segment_type, segment_pool_id, is_expandable, blocks: [{address, size,
 *               requested_size, state, frames}], frames}],
 *   device_traces: [[{action, addr, size, stream, time_us, compile_context, user_metadata,
 *                     frames}]],
 *   allocator_settings: {…}, external_annotations: []}
 * ```
 *
 * `frames` comes last where PyTorch gathered a stack (it sets the key after symbolizing them all);
 * where there is none it is the one shared empty list, and in a segment it comes before `blocks`.
 *
 * Values read back from a pickle (`unpickle`) are written by the same rules: a number is an `int`
 * unless it has a fraction or its key is a float setting, a list under `segment_pool_id` is a
 * tuple, and the lists and dicts under a `frames` key keep their identity (a frame dict that the
 * file shared is shared again).
 */
import { ItemBatches, type PickleWriter, type UnpickledValue } from '@allot/pickle';
import { ACTION_NAMES, type EntrySink } from './caching-simulation';
import { InternedStrings, StringTable } from './snapshot-strings';
import { FRAME_KEYS, StackLists, type StackOptions } from './stack-lists';

/** Strings PyTorch makes once per snapshot: keys, actions, segment types, block states. */
const KNOWN = [
  'action',
  'addr',
  'size',
  'stream',
  'time_us',
  'compile_context',
  'user_metadata',
  'frames',
  'device',
  'address',
  'total_size',
  'allocated_size',
  'active_size',
  'requested_size',
  'segment_type',
  'segment_pool_id',
  'is_expandable',
  'blocks',
  'state',
  'device_free',
  'small',
  'large',
  'active_allocated',
  'inactive',
  ...ACTION_NAMES,
] as const;
const id = Object.fromEntries(KNOWN.map((name, i) => [name, i])) as Record<
  (typeof KNOWN)[number],
  number
>;
/** Table id of each action, by its number in caching-simulation.ts. */
const ACTION_IDS = ACTION_NAMES.map((name) => id[name]);

/** Keys PyTorch makes once per snapshot, shared by entries, segments and blocks. */
const STATIC_KEYS = new Set<string>(KNOWN.slice(0, KNOWN.indexOf('device_free') + 1));
/** Keys whose string values PyTorch makes once per snapshot. */
const SHARED_VALUE_KEYS = new Set(['action', 'segment_type', 'state']);
/** Keys whose values are Python floats even when integral. */
const FLOAT_KEYS = new Set(['garbage_collection_threshold']);
/** Keys whose list values are Python tuples. */
const TUPLE_KEYS = new Set(['segment_pool_id']);
/** `compile_context` of an entry recorded outside `torch.compile`. */
const NO_COMPILE_CONTEXT = 'N/A';

/** A dict as `unpickle` returns it. */
export type Dict = { [key: string]: UnpickledValue };

/** A segment of the synthetic end state. */
export interface SegmentRecord {
  readonly device: number;
  readonly address: number;
  readonly size: number;
  readonly small: boolean;
  /** Key of its stack (the allocation that made it), -1 for one of its own. */
  readonly stack: number;
  readonly blocks: readonly BlockRecord[];
}

/** A block of a {@link SegmentRecord}. */
export interface BlockRecord {
  readonly size: number;
  readonly requested: number;
  readonly allocated: boolean;
  /** Key of its stack (the allocation it holds), -1 for one of its own. */
  readonly stack: number;
}

/** The allocator settings PyTorch records with its defaults (PyTorch 2.11). */
export function defaultAllocatorSettings(): Dict {
  const roundup: Dict = {};
  for (let divisions = 1; divisions <= 32768; divisions *= 2) roundup[String(divisions)] = 0;
  return {
    PYTORCH_CUDA_ALLOC_CONF: '',
    max_split_size: -1,
    garbage_collection_threshold: 0,
    expandable_segments: false,
    pinned_num_register_threads: 1,
    release_lock_on_cudamalloc: false,
    pinned_use_cuda_host_register: false,
    graph_capture_record_stream_reuse: false,
    roundup_power2_divisions: roundup,
  };
}

/** Writes snapshot dicts; see the file comment. */
export class SnapshotEncoder {
  /** Strings of the snapshot's own scope: its keys, action names, segment types, states. */
  readonly strings: InternedStrings;
  /** Strings of `py_symbolize`'s scope: the keys of frame dicts. */
  private readonly frameStrings: InternedStrings;
  readonly stacks: StackLists;
  private readonly table: StringTable;
  private readonly withStacks: boolean;
  /** Memo index of each list or dict under a `frames` key already written. */
  private readonly identity = new Map<object, number>();
  /** `bytes` of length 0 or 1 (one object each in CPython), by value. */
  private readonly tinyBytes = new Map<number, number>();

  constructor(
    readonly writer: PickleWriter,
    stackOptions: StackOptions,
  ) {
    this.strings = new InternedStrings(writer);
    this.table = new StringTable(writer, this.strings, KNOWN);
    this.frameStrings = this.strings.scope();
    this.stacks = new StackLists(writer, this.frameStrings, stackOptions);
    this.withStacks = stackOptions.depth > 0;
  }

  /** Writes each entry of `device`'s synthetic trace as the next item of its list, `items`. */
  traceSink(device: number, items: ItemBatches): EntrySink {
    const { writer, table, strings, stacks, withStacks } = this;
    return {
      entry: (action, addr, size, timeUs, stack, lastUse) => {
        items.before();
        writer.emptyDict();
        writer.mark();
        table.write(id.action);
        table.write(ACTION_IDS[action]!);
        this.int(id.addr, addr);
        this.int(id.size, size);
        this.int(id.stream, 0);
        this.int(id.time_us, timeUs);
        table.write(id.compile_context);
        writer.str(NO_COMPILE_CONTEXT);
        table.write(id.user_metadata);
        strings.write('');
        if (withStacks) {
          table.write(id.frames);
          stacks.write(device, stack, lastUse);
        }
        writer.setitems(false);
        items.after();
      },
    };
  }

  /** One segment of the synthetic end state, with its blocks. */
  segment(segment: SegmentRecord): void {
    const { writer, table } = this;
    let allocated = 0;
    let requested = 0;
    for (const block of segment.blocks) {
      if (!block.allocated) continue;
      allocated += block.size;
      requested += block.requested;
    }
    writer.emptyDict();
    writer.mark();
    this.int(id.device, segment.device);
    this.int(id.address, segment.address);
    this.int(id.total_size, segment.size);
    this.int(id.allocated_size, allocated);
    this.int(id.active_size, allocated);
    this.int(id.requested_size, requested);
    this.int(id.stream, 0);
    table.write(id.segment_type);
    table.write(segment.small ? id.small : id.large);
    table.write(id.segment_pool_id);
    writer.tupleStart(2);
    writer.int(0);
    writer.int(0);
    writer.tupleEnd(2);
    table.write(id.is_expandable);
    writer.bool(false);
    if (!this.withStacks) {
      table.write(id.frames);
      this.stacks.writeEmpty();
    }
    table.write(id.blocks);
    this.blocks(segment);
    if (this.withStacks) {
      table.write(id.frames);
      this.stacks.write(segment.device, segment.stack, false);
    }
    writer.setitems(false);
  }

  private blocks(segment: SegmentRecord): void {
    const writer = this.writer;
    const table = this.table;
    writer.emptyList();
    const batches = new ItemBatches(writer, segment.blocks.length, false);
    let address = segment.address;
    for (const block of segment.blocks) {
      batches.before();
      writer.emptyDict();
      writer.mark();
      this.int(id.address, address);
      this.int(id.size, block.size);
      this.int(id.requested_size, block.requested);
      table.write(id.state);
      table.write(block.allocated ? id.active_allocated : id.inactive);
      table.write(id.frames);
      if (block.allocated && this.withStacks) {
        this.stacks.write(segment.device, block.stack, false);
      } else {
        this.stacks.writeEmpty();
      }
      writer.setitems(false);
      batches.after();
      address += block.size;
    }
  }

  /** An item whose value is an integer: the known key, then the number. */
  private int(key: number, value: number): void {
    this.table.write(key);
    this.writer.int(value);
  }

  /**
   * A dict read from a snapshot, its items in their order; `stack` (when given) writes a
   * `frames` item last in place of the dict's own, and `special` may write an item's value
   * itself (returning true).
   */
  record(
    dict: Dict,
    stack: (() => void) | null,
    special?: (key: string, value: UnpickledValue) => boolean,
  ): void {
    const writer = this.writer;
    const keys = Object.keys(dict);
    const replaced = stack !== null && Object.hasOwn(dict, 'frames');
    const count = keys.length + (stack === null ? 0 : 1) - (replaced ? 1 : 0);
    writer.emptyDict();
    const batches = new ItemBatches(writer, count, true);
    for (const key of keys) {
      if (stack !== null && key === 'frames') continue;
      batches.before();
      this.key(key, false);
      const value = dict[key]!;
      if (special === undefined || !special(key, value)) this.value(value, key, key === 'frames');
      batches.after();
    }
    if (stack !== null) {
      batches.before();
      this.table.write(id.frames);
      stack();
      batches.after();
    }
  }

  /** Any value read from a pickle; `key` is the dict key it sits under, for the rules above. */
  value(value: UnpickledValue, key?: string, keepIdentity = false): void {
    const writer = this.writer;
    if (value === null) writer.none();
    else if (typeof value === 'boolean') writer.bool(value);
    else if (typeof value === 'number') {
      if (Number.isInteger(value) && !(key !== undefined && FLOAT_KEYS.has(key))) writer.int(value);
      else writer.float(value);
    } else if (typeof value === 'bigint') writer.int(value);
    else if (typeof value === 'string') {
      if (key !== undefined && SHARED_VALUE_KEYS.has(key)) this.strings.write(value);
      else this.strings.fresh(value);
    } else if (value instanceof Uint8Array) this.bytes(value);
    else this.container(value, key, keepIdentity);
  }

  /** A list, tuple or dict. */
  private container(value: UnpickledValue[] | Dict, key: string | undefined, keep: boolean): void {
    const writer = this.writer;
    const known = keep ? this.identity.get(value) : undefined;
    if (known !== undefined) {
      writer.get(known);
      return;
    }
    let memo: number;
    if (Array.isArray(value) && key !== undefined && TUPLE_KEYS.has(key)) {
      writer.tupleStart(value.length);
      for (const item of value) this.value(item, undefined, keep);
      memo = writer.tupleEnd(value.length);
    } else if (Array.isArray(value)) {
      memo = writer.emptyList();
      const batches = new ItemBatches(writer, value.length, false);
      for (const item of value) {
        batches.before();
        this.value(item, undefined, keep);
        batches.after();
      }
    } else {
      memo = writer.emptyDict();
      const keys = Object.keys(value);
      const batches = new ItemBatches(writer, keys.length, true);
      for (const item of keys) {
        batches.before();
        this.key(item, keep);
        this.value(value[item]!, item, keep || item === 'frames');
        batches.after();
      }
    }
    if (keep && memo >= 0) this.identity.set(value, memo);
  }

  /**
   * A dict key: one object per snapshot for PyTorch's own keys (and per stack symbolization for a
   * frame's), a new one for any other (annotation metadata, the divisions of a setting).
   */
  private key(key: string, inFrames: boolean): void {
    if (inFrames && (FRAME_KEYS as readonly string[]).includes(key)) this.frameStrings.write(key);
    else if (STATIC_KEYS.has(key)) this.strings.write(key);
    else this.strings.fresh(key);
  }

  private bytes(value: Uint8Array): void {
    if (value.length > 1) {
      this.writer.bytes(value);
      return;
    }
    const tiny = value.length === 0 ? -1 : value[0]!;
    const known = this.tinyBytes.get(tiny);
    if (known !== undefined) this.writer.get(known);
    else this.tinyBytes.set(tiny, this.writer.bytes(value));
  }
}
