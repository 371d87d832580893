/**
 * An opt-in ring buffer of allocator events, PyTorch's `_record_memory_history` in spirit.
 *
 * Events live in parallel typed arrays (kind, address, size, stream, time), so recording one costs
 * a few stores and a clock read and creates no garbage. Optional stack traces (`new Error().stack`,
 * only when `stacks` is on) and annotation names go into a side array. When the buffer is full the
 * oldest event is overwritten and `dropped` grows.
 */

/** Actions of PyTorch's trace entries, plus user annotations. */
export type TraceAction =
  | 'alloc'
  | 'free_requested'
  | 'free_completed'
  | 'segment_alloc'
  | 'segment_free'
  | 'oom'
  | 'snapshot'
  | 'annotation';

/** Stage of an annotation: the start or end of a region, or a single mark. */
export type AnnotationStage = 'START' | 'END' | 'MARK';

/** One recorded event. */
export interface TraceEvent {
  readonly action: TraceAction;
  /** Block or segment address (0 for `oom`, `snapshot` and annotations). */
  readonly address: number;
  /** Bytes: the block's usable size, the segment's size, or the failed request for `oom`. */
  readonly size: number;
  /** Stream the event happened on. @defaultValue 0 */
  readonly stream: number;
  /** Milliseconds since the Unix epoch (fractional). */
  readonly time: number;
  /** For `oom`: bytes free when the request failed. */
  readonly freeBytes?: number;
  /** For annotations: the name given. */
  readonly name?: string;
  /** For annotations: the stage. */
  readonly stage?: AnnotationStage;
  /** Stack trace text, when stacks are recorded. */
  readonly stack?: string;
}

/** Options of the trace. */
export interface TraceOptions {
  /** Events kept; older ones are overwritten. @defaultValue 65536 */
  readonly capacity?: number;
  /** Record `new Error().stack` with every event (costly: microseconds per event). @defaultValue false */
  readonly stacks?: boolean;
  /** Clock in milliseconds since the Unix epoch. @defaultValue performance.timeOrigin + performance.now() */
  readonly clock?: () => number;
}

/** Internal event kinds; `FREE` is a free that completed at once (exported as requested + completed). */
export const EventKind = {
  Alloc: 0,
  FreeRequested: 1,
  FreeCompleted: 2,
  Free: 3,
  SegmentAlloc: 4,
  SegmentFree: 5,
  Oom: 6,
  Snapshot: 7,
  Annotation: 8,
} as const;
export type EventKind = (typeof EventKind)[keyof typeof EventKind];

/** Default number of events kept. */
export const DEFAULT_TRACE_CAPACITY = 65536;
const STAGES: readonly AnnotationStage[] = ['START', 'END', 'MARK'];

/** The default clock: `performance.now()` from an origin read once (reading it per event is slow). */
function defaultClock(): () => number {
  const origin = performance.timeOrigin;
  return () => origin + performance.now();
}

export class TraceBuffer {
  readonly capacity: number;
  readonly stacks: boolean;
  private readonly clock: () => number;
  private readonly kinds: Uint8Array;
  private readonly addresses: Float64Array;
  private readonly sizes: Float64Array;
  private readonly streams: Float64Array;
  private readonly times: Float64Array;
  private readonly notes: (string | undefined)[];
  private next = 0;
  private count = 0;
  /** Events overwritten because the buffer was full. */
  dropped = 0;

  constructor(options: TraceOptions = {}) {
    const capacity = options.capacity ?? DEFAULT_TRACE_CAPACITY;
    if (!Number.isSafeInteger(capacity) || capacity < 1) {
      throw new RangeError(`trace capacity must be a positive integer, got ${capacity}`);
    }
    this.capacity = capacity;
    this.stacks = options.stacks ?? false;
    this.clock = options.clock ?? defaultClock();
    this.kinds = new Uint8Array(capacity);
    this.addresses = new Float64Array(capacity);
    this.sizes = new Float64Array(capacity);
    this.streams = new Float64Array(capacity);
    this.times = new Float64Array(capacity);
    this.notes = new Array<string | undefined>(capacity).fill(undefined);
  }

  /** Events held now. */
  get length(): number {
    return this.count;
  }

  /** Records an event; `note` is an annotation name (a stack is taken when stacks are on). */
  record(kind: EventKind, address: number, size: number, stream: number, note?: string): void {
    const i = this.next;
    this.kinds[i] = kind;
    this.addresses[i] = address;
    this.sizes[i] = size;
    this.streams[i] = stream;
    this.times[i] = this.clock();
    this.notes[i] = note ?? (this.stacks ? new Error().stack : undefined);
    this.next = i + 1 === this.capacity ? 0 : i + 1;
    if (this.count < this.capacity) this.count++;
    else this.dropped++;
  }

  /** Records a user annotation. */
  annotate(name: string, stage: AnnotationStage): void {
    this.record(EventKind.Annotation, 0, STAGES.indexOf(stage), 0, name);
  }

  /** Forgets every event. */
  clear(): void {
    this.next = 0;
    this.count = 0;
    this.dropped = 0;
    this.notes.fill(undefined);
  }

  /** The events, oldest first; a completed free becomes `free_requested` then `free_completed`. */
  events(): TraceEvent[] {
    const out: TraceEvent[] = [];
    const start = this.count < this.capacity ? 0 : this.next;
    for (let n = 0; n < this.count; n++) {
      const i = (start + n) % this.capacity;
      const kind = this.kinds[i] as EventKind;
      const address = this.addresses[i]!;
      const size = this.sizes[i]!;
      const stream = this.streams[i]!;
      const time = this.times[i]!;
      const note = this.notes[i];
      const stack = note === undefined ? {} : { stack: note };
      switch (kind) {
        case EventKind.Free:
          out.push({ action: 'free_requested', address, size, stream, time, ...stack });
          out.push({ action: 'free_completed', address, size, stream, time, ...stack });
          break;
        case EventKind.Oom:
          out.push({ action: 'oom', address: 0, size, stream, time, freeBytes: address, ...stack });
          break;
        case EventKind.Annotation:
          out.push({
            action: 'annotation',
            address: 0,
            size: 0,
            stream,
            time,
            name: note ?? '',
            stage: STAGES[size] ?? 'MARK',
          });
          break;
        default:
          out.push({ action: ACTIONS[kind], address, size, stream, time, ...stack });
      }
    }
    return out;
  }
}

const ACTIONS: Record<EventKind, TraceAction> = {
  0: 'alloc',
  1: 'free_requested',
  2: 'free_completed',
  3: 'free_completed',
  4: 'segment_alloc',
  5: 'segment_free',
  6: 'oom',
  7: 'snapshot',
  8: 'annotation',
};
