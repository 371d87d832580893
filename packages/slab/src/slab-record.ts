/**
 * One slab's record: its header as the fields of a plain object, and one f64 word per object; and
 * a size class's head, the record its allocations take from.
 *
 * The header was once the first words of the same `Float64Array` as the objects; as fields of an
 * object of one shape, a read is one load at a fixed offset, where a typed-array word is a bounds
 * check and, for a count or a link used as an index, a float-to-int conversion with its check.
 * The fields start with values of the type they keep (small integers stay small integers), so V8
 * gives every record one shape with the same field representations.
 */

export class SlabRecord {
  /** Address of the slab's first byte. */
  base = 0;
  /** Object size, in bytes, and its inverse (for the division on free). */
  size = 0;
  inverse = Number.NaN;
  /** First object of the free list, −1 when empty. */
  freeHead = -1;
  /** Free objects. */
  free = 0;
  objects = 0;
  /** Objects from here on were never handed out. */
  bump = 0;
  /** Size class. */
  cls = 0;
  /** Slab id: the page map's value for the slab's pages, and its index among the records. */
  id = 0;
  /** Neighbours (slab ids, −1 for none) on the class's list. */
  next = -1;
  prev = -1;
  /** Usable bytes the upstream gave for the slab. */
  held = 0;
  /** Bytes of slab covered by the page map (the class's slab size). */
  span = 0;
  /** Whether the slab is held (a spare id's record is not). */
  inUse = false;
  /** Address the upstream returned (the slab's base, unless the slab had to be aligned inside it). */
  upstream = 0;
  /**
   * One word per object, exactly `objects` of them: the requested size (> 0) while live; while
   * free, the next free object n encoded as −(n + 1), which is `~n` (0 ends the list); 0 while
   * never handed out.
   */
  words: Float64Array;

  constructor(objects: number) {
    this.words = new Float64Array(objects);
  }
}

/** Whether the slab of `record` has no live object. */
export function isEmpty(record: SlabRecord): boolean {
  return record.free === record.objects;
}

/**
 * A size class's head: the record at the head of its list of slabs with a free object, or null.
 * Allocation reads it as a field of an object it keeps for the size asked last, with none of an
 * array element's bounds and kind checks.
 */
export class ClassHead {
  current: SlabRecord | null = null;
  /** The class's index. */
  readonly cls: number;

  constructor(cls: number) {
    this.cls = cls;
  }
}
