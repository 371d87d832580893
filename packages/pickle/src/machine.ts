/**
 * The pickle machine: it reads its input in chunks, so an input too large to hold (a PyTorch memory
 * snapshot with stacks is often gigabytes) is read in one pass, and {@link unpickle} is this
 * machine over one buffer.
 *
 * ```
 *  chunk ─► run(): opcode loop over the chunk ─► stack, MARKs, memo ─► hooks.append() may consume
 *  chunk ─►   an opcode cut by the chunk's end waits in `carry`, sized to what it needs, and runs
 *             once the next chunks complete it (no chunk boundary needs more than that opcode)
 * ```
 *
 * Values are JavaScript scalars (number, bigint, string, boolean, null, Uint8Array) and the
 * machine's own containers, {@link PList} and {@link PDict}: plain classes, so a key `__proto__` is
 * only a key. A container is handed to {@link MachineHooks.append} as its parent list takes it,
 * when it is complete; the hook may consume it (a trace entry turned into columns), and the list
 * then keeps only its count. The memo is chunked, and a consumed value's memo slot is cleared, so
 * memory grows with what the hooks keep, not with the input.
 *
 * Every opcode checks its bytes before it changes anything, so an opcode cut by a chunk's end is
 * simply run again when its bytes are there. Errors (see {@link MachineOptions.error}) carry the
 * byte offset of the opcode at fault. Opcodes that would run Python code are refused.
 *
 * Fast paths (`fast-paths.ts`) read, in one step, the shapes a snapshot is made of: a dict of
 * scalars and strings (a trace entry) and, when the hooks intern frames, a frame dict written anew
 * and a whole `frames` list. Each decodes its bytes once without changing anything, and commits
 * only what the opcodes one by one would have left; any other shape, a cut buffer or a limit in
 * reach sends the same bytes down the ordinary opcodes.
 */

import { FastPaths } from './fast-paths';
import type { MachineHooks } from './hooks';
import { INCOMPLETE, type MachineOptions, PickleState } from './machine-state';
import { FORGOTTEN } from './memo';
import { decodeLong, text } from './operands';
import { PDict, PList } from './values';

/** Whether machines made now take the fast paths for lists and dicts (see {@link withoutFastPaths}). */
let fastPaths = true;

/**
 * Runs `fn` with the fast paths off in the machines it makes, but for a frame dict's (it interns
 * the dict as it is read, which holds less than building it does): for the tests that check that
 * they change no result.
 */
export function withoutFastPaths<T>(fn: () => T): T {
  fastPaths = false;
  try {
    return fn();
  } finally {
    fastPaths = true;
  }
}

/** The streaming pickle machine. Feed it with {@link push}, then {@link end}. */
export class PickleMachine extends PickleState {
  /** Bytes of an opcode cut by a chunk's end, and how many of them are there. */
  private carry: Uint8Array | null = null;
  private carryFill = 0;
  /** Absolute offset of the current buffer's first byte. */
  private base = 0;
  private view: DataView = new DataView(new ArrayBuffer(0));
  private done = false;
  private result: unknown = undefined;
  /** Bytes taken so far. */
  bytesIn = 0;

  /** What the fast paths read, or null when they are off. */
  private readonly fast: FastPaths | null;
  /** Whether all fast paths are on, not only a frame dict's (see {@link withoutFastPaths}). */
  private readonly allFast: boolean;

  constructor(hooks: MachineHooks, options: MachineOptions = {}) {
    super(hooks, options);
    this.fast = fastPaths || hooks.smallDict !== undefined ? new FastPaths(hooks, this.memo) : null;
    this.allFast = fastPaths;
  }

  /** Whether STOP was read. */
  get stopped(): boolean {
    return this.done;
  }

  /** Takes the next chunk of the input (bytes after STOP are not read). */
  push(chunk: Uint8Array): void {
    this.bytesIn += chunk.length;
    let from = 0;
    while (this.carry !== null) {
      if (this.done) return;
      const carry = this.carry;
      const take = Math.min(carry.length - this.carryFill, chunk.length - from);
      carry.set(chunk.subarray(from, from + take), this.carryFill);
      this.carryFill += take;
      from += take;
      if (this.carryFill < carry.length) return;
      // The carry holds exactly the bytes its opcode needs (or its header, which then tells how
      // many more): run it, then go on with the rest of the chunk.
      this.carry = null;
      this.run(carry, this.base, 0);
    }
    if (!this.done) this.run(chunk, this.base - from, from);
  }

  /** The input ended: returns the pickled value, or fails unless STOP was read. */
  end(): unknown {
    if (!this.done) {
      this.opAt = this.base;
      const missing = this.carry === null ? 0 : this.carry.length - this.carryFill;
      this.fail(
        missing > 0 ? `${missing} more byte(s) of operand` : 'an opcode (STOP ends a pickle)',
        'the end of the file (truncated pickle)',
      );
    }
    return this.result;
  }

  /**
   * Runs the opcodes of `buf` from `from`, `buf[0]` being at absolute offset `base`. An opcode cut
   * by the end moves to {@link carry}.
   */
  private run(buf: Uint8Array, base: number, from: number): void {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    let p = from;
    const end = buf.length;
    const stack = this.stack;
    const memo = this.memo;
    const most = this.limits.maxItems;
    const fast = this.fast;
    const frameHooks = this.hooks.frames ?? null;
    try {
      while (p < end && !this.done) {
        // The opcodes that make most of a snapshot's bytes, inline: a memo reference (a shared
        // frame, a key) and a small int. Anything unusual (a missing slot, a full stack, an
        // operand cut by the chunk's end) goes to step(), which says what is wrong.
        const op = buf[p]!;
        if ((op === 0x68 || op === 0x6a) && stack.length < most) {
          const wide = op === 0x6a;
          if (p + (wide ? 5 : 2) <= end) {
            const index = wide ? this.view.getUint32(p + 1, true) : buf[p + 1]!;
            const value = memo.get(index);
            if (value !== undefined && value !== FORGOTTEN) {
              stack.push(value);
              p += wide ? 5 : 2;
              continue;
            }
          }
        } else if (op === 0x4b && p + 2 <= end && stack.length < most) {
          stack.push(buf[p + 1]!);
          p += 2;
          continue;
        } else if (op === 0x7d && fast !== null && memo.dense) {
          const next = fast.readDict(buf, this.view, p, end);
          if (next >= 0 && this.commitDict(fast, this.allFast)) {
            p = next;
            continue;
          }
        } else if (
          op === 0x5d &&
          fast !== null &&
          this.allFast &&
          frameHooks !== null &&
          memo.dense
        ) {
          const next = fast.readList(buf, this.view, p, end, frameHooks);
          if (next >= 0 && this.commitList(fast)) {
            p = next;
            continue;
          }
        }
        this.opAt = base + p;
        p = this.step(buf, p, end);
      }
    } catch (error) {
      if (error !== INCOMPLETE) throw error;
      const opStart = this.opAt - base;
      const have = end - opStart;
      const need = Math.max(INCOMPLETE.need, have + 1);
      if (need > this.limits.maxStringBytes + 16) {
        this.limit('bytes in one string or bytes value', this.limits.maxStringBytes);
      }
      const carry = new Uint8Array(need);
      carry.set(buf.subarray(opStart, end));
      this.carry = carry;
      this.carryFill = have;
      this.base = base + opStart;
      return;
    }
    this.base = base + end;
  }

  /**
   * Pushes the string or bytes of opcode `op` at `p`: a length of `width` bytes at `q`, then the
   * data; returns where the next opcode starts.
   */
  private pushText(
    op: number,
    buf: Uint8Array,
    q: number,
    end: number,
    p: number,
    width: number,
  ): number {
    this.need(q, width, end, p);
    const n =
      width === 1
        ? buf[q]!
        : width === 4
          ? this.view.getUint32(q, true)
          : Number(this.view.getBigUint64(q, true));
    this.checkLength(n);
    this.need(q + width, n, end, p);
    this.pushValue(text(op, buf, q + width, n));
    return q + width + n;
  }

  /** Runs the opcode at `p`; returns where the next one starts. */
  private step(buf: Uint8Array, p: number, end: number): number {
    const op = buf[p]!;
    const q = p + 1;
    const stack = this.stack;
    switch (op) {
      case 0x80: // PROTO
        this.need(q, 1, end, p);
        if (buf[q]! > 5) this.fail('pickle protocol 0 to 5', `protocol ${buf[q]}`);
        return q + 1;
      case 0x95: // FRAME: the framed data simply follows
        this.need(q, 8, end, p);
        return q + 8;
      case 0x28: // MARK
        if (this.marks.length >= this.limits.maxItems) {
          this.limit('open MARKs', this.limits.maxItems);
        }
        this.marks.push(stack.length);
        return q;
      case 0x2e: // STOP
        this.result = this.pop();
        this.done = true;
        // Nothing refers to the memo any more: its memory goes before the caller's next step.
        this.memo.release();
        return q;
      case 0x30: // POP
        this.pop();
        return q;
      case 0x31: // POP_MARK
        this.popMark();
        return q;
      case 0x32: // DUP
        this.pushValue(this.top());
        return q;
      case 0x4e: // NONE
        this.pushValue(null);
        return q;
      case 0x88: // NEWTRUE
        this.pushValue(true);
        return q;
      case 0x89: // NEWFALSE
        this.pushValue(false);
        return q;
      case 0x4b: // BININT1
        this.need(q, 1, end, p);
        this.pushValue(buf[q]!);
        return q + 1;
      case 0x4d: // BININT2
        this.need(q, 2, end, p);
        this.pushValue(buf[q]! | (buf[q + 1]! << 8));
        return q + 2;
      case 0x4a: // BININT
        this.need(q, 4, end, p);
        this.pushValue(this.view.getInt32(q, true));
        return q + 4;
      case 0x8a: {
        // LONG1
        this.need(q, 1, end, p);
        const n = buf[q]!;
        this.need(q + 1, n, end, p);
        this.pushValue(decodeLong(buf, q + 1, n));
        return q + 1 + n;
      }
      case 0x8b: {
        // LONG4
        this.need(q, 4, end, p);
        const n = this.view.getUint32(q, true);
        if (n > this.limits.maxIntegerBytes) {
          this.limit('bytes in one integer', this.limits.maxIntegerBytes);
        }
        this.need(q + 4, n, end, p);
        this.pushValue(decodeLong(buf, q + 4, n));
        return q + 4 + n;
      }
      case 0x47: // BINFLOAT
        this.need(q, 8, end, p);
        this.pushValue(this.view.getFloat64(q, false));
        return q + 8;
      case 0x8c: // SHORT_BINUNICODE
      case 0x43: // SHORT_BINBYTES
      case 0x55: // SHORT_BINSTRING
        return this.pushText(op, buf, q, end, p, 1);
      case 0x58: // BINUNICODE
      case 0x42: // BINBYTES
      case 0x54: // BINSTRING
        return this.pushText(op, buf, q, end, p, 4);
      case 0x8d: // BINUNICODE8
      case 0x8e: // BINBYTES8
      case 0x96: // BYTEARRAY8
        return this.pushText(op, buf, q, end, p, 8);
      case 0x5d: // EMPTY_LIST
        this.pushValue(new PList());
        return q;
      case 0x29: // EMPTY_TUPLE
        this.pushValue(new PList(true));
        return q;
      case 0x8f: // EMPTY_SET
        this.pushValue(new PList());
        return q;
      case 0x7d: // EMPTY_DICT
        this.pushValue(new PDict());
        return q;
      case 0x85: // TUPLE1
      case 0x86: // TUPLE2
      case 0x87: {
        // TUPLE3
        const n = op - 0x84;
        const tuple = new PList(true);
        const values = this.popN(n);
        for (const value of values) this.keep(tuple, value);
        this.pushValue(tuple);
        return q;
      }
      case 0x74: // TUPLE
      case 0x6c: // LIST
      case 0x91: {
        // FROZENSET
        const values = this.popMark();
        const list = new PList(op === 0x74);
        for (const value of values) this.keep(list, value);
        this.pushValue(list);
        return q;
      }
      case 0x61: {
        // APPEND
        const value = this.pop();
        this.appendTo(this.listUnder('APPEND'), value);
        return q;
      }
      case 0x65: // APPENDS
      case 0x90: {
        // ADDITEMS
        const at = this.marks.pop();
        if (at === undefined) this.fail('a MARK before this opcode', 'no MARK on the stack');
        const list = stack[at! - 1];
        if (!(list instanceof PList) || list.tuple || at! <= this.bottom()) {
          truncate(stack, at!);
          this.listUnder(op === 0x65 ? 'APPENDS' : 'ADDITEMS');
        }
        const target = list as PList;
        if (target.sink === null) {
          // The common case (a stack's frames, say): kept as they are, but for dicts.
          this.hold(stack.length - at!);
          const items = target.items;
          for (let i = at!; i < stack.length; i++) {
            const value = stack[i];
            if (value instanceof PDict) {
              this.release(1);
              this.appendTo(target, value);
            } else {
              if (value instanceof PList) this.weigh(target, value);
              items.push(value);
            }
          }
        } else {
          for (let i = at!; i < stack.length; i++) this.appendTo(target, stack[i]);
        }
        truncate(stack, at!);
        return q;
      }
      case 0x75: {
        // SETITEMS: the pairs above the MARK go straight from the stack into the dict
        const at = this.marks.pop();
        if (at === undefined) this.fail('a MARK before this opcode', 'no MARK on the stack');
        const dict = stack[at! - 1];
        if (!(dict instanceof PDict) || at! <= this.bottom()) {
          truncate(stack, at!);
          this.dictUnder('SETITEMS');
        }
        this.setItems(dict as PDict, stack, at!, stack.length);
        truncate(stack, at!);
        return q;
      }
      case 0x73: {
        // SETITEM
        const pairs = this.popN(2);
        this.setItems(this.dictUnder('SETITEM'), pairs, 0, 2);
        return q;
      }
      case 0x64: {
        // DICT
        const pairs = this.popMark();
        const dict = new PDict();
        this.setItems(dict, pairs, 0, pairs.length);
        this.pushValue(dict);
        return q;
      }
      case 0x94: // MEMOIZE
        this.memoPut(this.memo.next, this.top());
        return q;
      case 0x71: // BINPUT
        this.need(q, 1, end, p);
        this.memoPut(buf[q]!, this.top());
        return q + 1;
      case 0x72: // LONG_BINPUT
        this.need(q, 4, end, p);
        this.memoPut(this.view.getUint32(q, true), this.top());
        return q + 4;
      case 0x68: // BINGET
        this.need(q, 1, end, p);
        this.pushValue(this.memoGet(buf[q]!));
        return q + 1;
      case 0x6a: // LONG_BINGET
        this.need(q, 4, end, p);
        this.pushValue(this.memoGet(this.view.getUint32(q, true)));
        return q + 4;
      default:
        return this.lineOp(op, buf, q, end, p);
    }
  }
}

/** Drops the values of `stack` from `length` on (cheaper than setting `length`). */
function truncate(stack: unknown[], length: number): void {
  while (stack.length > length) stack.pop();
}
