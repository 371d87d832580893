/**
 * Which frame a small dict of a snapshot is: `{filename, line, name}` (three keys, a string
 * filename) as the stack table's frame id. A snapshot with stacks holds millions of such dicts, most
 * of them made of memo references to the same few thousand strings, so the frame found for each
 * (filename slot, name slot, line) is kept in a hash table of ints: a dict found there costs two
 * string comparisons (the same strings, compared by reference), not three map lookups.
 */
import type { StackTable } from './stack-table';

/** Most entries of the table; past them a dict is looked up by its strings. */
const MOST_ENTRIES = 1 << 20;

/** A snapshot's frame dicts, resolved to frame ids. */
export class FrameDicts {
  /**
   * Open addressing, 4 Int32s an entry: filename slot, name slot (-1: no name), line, frame id + 1
   * (0: an empty entry).
   */
  private table = new Int32Array(4 << 12);
  private entries = 0;

  constructor(private readonly stacks: StackTable) {}

  /**
   * The frame id of a dict's keys and values (alternating in `pairs[0, 2 × size)`, each value's
   * memo slot in `slots`, -1 for an int), interned unless `add` is false; -1 when it is no frame,
   * or a frame not interned and `add` false.
   */
  id(pairs: readonly unknown[], size: number, slots: Int32Array | null, add: boolean): number {
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
    if (f < 0) return -1;
    const filename = pairs[f];
    if (typeof filename !== 'string') return -1;
    const rawLine = l < 0 ? undefined : pairs[l];
    const line = typeof rawLine === 'number' ? rawLine : 0;
    const rawName = m < 0 ? undefined : pairs[m];
    const name = typeof rawName === 'string' ? rawName : '?';
    const fileSlot = slots === null ? -1 : slots[f >> 1]!;
    const nameSlot = slots === null || name === '?' ? -1 : slots[m >> 1]!;
    if (fileSlot < 0 || (nameSlot < 0 && name !== '?') || (line | 0) !== line) {
      return this.stacks.frameId(filename, line, name, add);
    }
    const table = this.table;
    const mask = (table.length >> 2) - 1;
    let at = mix(fileSlot, nameSlot, line) & mask;
    for (;;) {
      const e = at << 2;
      const stored = table[e + 3]!;
      if (stored === 0) break;
      if (table[e] === fileSlot && table[e + 1] === nameSlot && table[e + 2] === line) {
        // The slots may hold other strings by now (a pickle may store a slot again): check.
        const frame = this.stacks.frames[stored - 1]!;
        if (frame.filename === filename && frame.name === name) return stored - 1;
        return this.stacks.frameId(filename, line, name, add);
      }
      at = (at + 1) & mask;
    }
    const id = this.stacks.frameId(filename, line, name, add);
    if (id >= 0 && this.entries < MOST_ENTRIES) {
      const e = at << 2;
      table[e] = fileSlot;
      table[e + 1] = nameSlot;
      table[e + 2] = line;
      table[e + 3] = id + 1;
      if (++this.entries * 2 > mask + 1) this.grow();
    }
    return id;
  }

  /** Doubles the table. */
  private grow(): void {
    const old = this.table;
    const table = new Int32Array(old.length * 2);
    const mask = (table.length >> 2) - 1;
    for (let e = 0; e < old.length; e += 4) {
      if (old[e + 3] === 0) continue;
      let at = mix(old[e]!, old[e + 1]!, old[e + 2]!) & mask;
      while (table[(at << 2) + 3] !== 0) at = (at + 1) & mask;
      table.set(old.subarray(e, e + 4), at << 2);
    }
    this.table = table;
  }
}

/** A hash of a frame's slots and line. */
function mix(fileSlot: number, nameSlot: number, line: number): number {
  let h = Math.imul(fileSlot, 0x9e3779b1) ^ Math.imul(nameSlot + 0x7f4a7c15, 0x85ebca6b) ^ line;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  return h ^ (h >>> 15);
}
