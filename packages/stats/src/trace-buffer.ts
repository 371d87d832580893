/**
 * An opt-in ring buffer of allocator events, PyTorch's `_record_memory_history` in spirit.
 *
 * Events live in typed arrays (the kind in one; address, size, stream and time side by side in
 * another), so recording one costs a few stores and a clock read and creates no garbage. Optional
 * stack traces (`new Error().stack`, only when `stacks` is on) and annotation names go into a side
 * array. When the buffer is full the
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

/** Doubles per event in `data`: address, size, stream, time. */
const EVENT_DOUBLES = 4;

export class TraceBuffer {
  readonly capacity: number;
  readonly stacks: boolean;
  /** The caller's clock, or null for the default (read inline: it runs on every event). */
  private readonly clock: (() => number) | null;
  /** `performance.timeOrigin`, read once (reading it per event is slow). */
  private readonly origin: number;
  private readonly kinds: Uint8Array;
  /** Per event, EVENT_DOUBLES doubles: address, size, stream, time (one array: one bounds check). */
  private readonly data: Float64Array;
  private readonly notes: (string | undefined)[];
  /** Notes stored and not yet overwritten (while 0, writing `undefined` over a slot can be skipped). */
  private noted = 0;
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
    this.clock = options.clock ?? null;
    this.origin = performance.timeOrigin;
    this.kinds = new Uint8Array(capacity);
    this.data = new Float64Array(capacity * EVENT_DOUBLES);
    this.notes = new Array<string | undefined>(capacity).fill(undefined);
  }

  /** Events held now. */
  get length(): number {
    return this.count;
  }

  /** Records an event; `note` is an annotation name (a stack is taken when stacks are on). */
  record(kind: EventKind, address: number, size: number, stream: number, note?: string): void {
    const i = this.next;
    const at = i * 4; // EVENT_DOUBLES
    const data = this.data;
    this.kinds[i] = kind;
    data[at] = address;
    data[at + 1] = size;
    data[at + 2] = stream;
    data[at + 3] = this.clock === null ? this.origin + performance.now() : this.clock();
    const text = note ?? (this.stacks ? new Error().stack : undefined);
    if (text !== undefined) {
      if (this.notes[i] === undefined) this.noted++;
      this.notes[i] = text;
    } else if (this.noted > 0 && this.notes[i] !== undefined) {
      this.notes[i] = undefined;
      this.noted--;
    }
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
    this.noted = 0;
  }

  /** The events, oldest first; a completed free becomes `free_requested` then `free_completed`. */
  events(): TraceEvent[] {
    const out: TraceEvent[] = [];
    const start = this.count < this.capacity ? 0 : this.next;
    for (let n = 0; n < this.count; n++) {
      const i = (start + n) % this.capacity;
      const kind = this.kinds[i] as EventKind;
      const at = i * EVENT_DOUBLES;
      const address = this.data[at]!;
      const size = this.data[at + 1]!;
      const stream = this.data[at + 2]!;
      const time = this.data[at + 3]!;
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
