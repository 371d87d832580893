/**
 * Runs a command sequence against a fresh allocator and a simple model of its live blocks,
 * checking every invariant of DESIGN.md after each command. Returns the addresses it received, so
 * a second run can check determinism.
 */
import {
  type Allocator,
  InvalidArgumentError,
  InvalidFreeError,
  type Layout,
  type LayoutBlock,
  type Usage,
} from '@allot/core';
import { fail, hex } from './conformance-error';
import type { Operation } from './operations';
import type { Capabilities, ConformanceSubject } from './options';

interface LiveBlock {
  readonly address: number;
  readonly requested: number;
  readonly alignment: number;
  readonly usable: number;
  /** Byte written into every usable byte of the block when a view is available. */
  readonly fill: number;
}

export interface ResolvedCapabilities {
  readonly coalesces: boolean;
  readonly coalescesImmediately: boolean;
  readonly complete: boolean;
  readonly placement: NonNullable<Capabilities['placement']>;
  readonly maximalAllocation: boolean;
  readonly deterministic: boolean;
  readonly restoresInitialUsage: boolean;
  readonly layoutAccounting: boolean;
  readonly maxRequestSize: number;
  /** `undefined` first: "use the allocator's default alignment". */
  readonly alignments: readonly (number | undefined)[];
  readonly maxCommands: number;
}

export function resolveCapabilities(c: Capabilities = {}): ResolvedCapabilities {
  return {
    coalesces: c.coalesces ?? false,
    coalescesImmediately: c.coalescesImmediately ?? false,
    complete: c.complete ?? false,
    placement: c.placement ?? 'any',
    maximalAllocation: c.maximalAllocation ?? true,
    deterministic: c.deterministic ?? true,
    restoresInitialUsage: c.restoresInitialUsage ?? true,
    layoutAccounting: c.layoutAccounting ?? true,
    maxRequestSize: c.maxRequestSize ?? 4096,
    alignments: [undefined, ...(c.alignments ?? [1, 8, 64, 256])],
    maxCommands: c.maxCommands ?? 120,
  };
}

export function subjectOf<A extends Allocator>(
  made: A | ConformanceSubject<A>,
): ConformanceSubject<A> {
  return 'allocator' in made ? made : { allocator: made };
}

const USAGE_KEYS: readonly (keyof Usage)[] = [
  'capacity',
  'allocatedBytes',
  'freeBytes',
  'overheadBytes',
  'largestFreeBlock',
  'liveCount',
  'freeBlockCount',
];

function usageText(u: Usage): string {
  return USAGE_KEYS.map((k) => `${k}=${u[k]}`).join(' ');
}

function fingerprint(allocator: Allocator): string {
  const layout = allocator.layout?.();
  return `${usageText(allocator.usage())}|${layout ? JSON.stringify(layout) : ''}`;
}

function fits(block: LayoutBlock, size: number, alignment: number): boolean {
  const start = Math.ceil(block.address / alignment) * alignment;
  return start + size <= block.address + block.size;
}

function freeBlocks(layout: Layout): LayoutBlock[] {
  const out: LayoutBlock[] = [];
  for (const segment of layout.segments) for (const b of segment.blocks) if (b.free) out.push(b);
  return out;
}

export class Scenario {
  private readonly allocator: Allocator;
  private readonly view: ConformanceSubject['view'];
  private readonly live: LiveBlock[] = [];
  private readonly freed: number[] = [];
  private readonly initial: Usage;
  private readonly initialLargest: number;
  private serial = 0;
  /** Every address `allocate` returned, in order (`null` for refusals): the determinism record. */
  readonly addresses: (number | null)[] = [];

  constructor(
    private readonly name: string,
    subject: ConformanceSubject,
    private readonly caps: ResolvedCapabilities,
  ) {
    this.allocator = subject.allocator;
    this.view = subject.view;
    this.initial = this.allocator.usage();
    this.initialLargest = this.initial.largestFreeBlock;
    this.checkAccounting('initial state');
  }

  run(operations: readonly Operation[]): void {
    for (let i = 0; i < operations.length; i++) {
      const op = operations[i]!;
      const context = `after command ${i} (${describe(op)})`;
      switch (op.kind) {
        case 'allocate':
          this.allocate(this.sizeFor(op), this.caps.alignments[op.alignIndex], context);
          break;
        case 'free':
          if (this.live.length > 0) this.free(op.pick % this.live.length, context);
          break;
        case 'misuse':
          this.misuse(op, context);
          break;
        case 'reset':
          this.reset(context);
          break;
      }
      this.checkAccounting(context);
    }
    this.freeEverything();
  }

  private sizeFor(op: Extract<Operation, { kind: 'allocate' }>): number {
    const top =
      op.scale === 'small'
        ? Math.min(64, this.caps.maxRequestSize)
        : op.scale === 'medium'
          ? this.caps.maxRequestSize
          : Math.max(1, this.initialLargest, this.caps.maxRequestSize);
    return Math.max(1, Math.ceil(op.fraction * top));
  }

  private allocate(size: number, requestedAlignment: number | undefined, context: string): void {
    const a = this.allocator;
    const alignment = Math.max(requestedAlignment ?? a.alignment, a.alignment);
    const before = this.caps.placement !== 'any' || this.caps.complete ? a.layout?.() : undefined;
    const address = a.allocate(size, requestedAlignment);
    this.addresses.push(address);
    if (address === null) {
      if (this.caps.complete && before) {
        const fitting = freeBlocks(before).find((b) => fits(b, size, alignment));
        if (fitting) {
          fail(
            'completeness',
            `${this.name} refused ${size} B (alignment ${alignment}) although the free block ` +
              `[${hex(fitting.address)}, +${fitting.size}) fits it, ${context}`,
          );
        }
      }
      return;
    }
    if (!Number.isSafeInteger(address)) {
      fail('bounds', `${this.name} returned a non-integer address ${address}, ${context}`);
    }
    if (address % alignment !== 0) {
      fail(
        'alignment',
        `${hex(address)} is not aligned to ${alignment} (${size} B requested), ${context}`,
      );
    }
    let usable: number;
    try {
      usable = a.usableSize(address);
    } catch (error) {
      fail('usable-size', `usableSize(${hex(address)}) threw ${String(error)}, ${context}`);
    }
    if (!(usable >= size)) {
      fail(
        'usable-size',
        `usableSize(${hex(address)}) is ${usable}, less than the ${size} B requested, ${context}`,
      );
    }
    if (!a.owns(address))
      fail('accounting', `owns(${hex(address)}) is false for a live block, ${context}`);
    if (before) this.checkPlacement(before, address, size, alignment, context);
    const block: LiveBlock = {
      address,
      requested: size,
      alignment,
      usable,
      fill: (this.serial++ % 251) + 1,
    };
    this.checkNoOverlap(block, context);
    this.live.push(block);
    const forget = this.freed.indexOf(address);
    if (forget >= 0) this.freed.splice(forget, 1);
    if (this.view) this.view(address, usable).fill(block.fill);
  }

  private checkPlacement(
    before: Layout,
    address: number,
    size: number,
    alignment: number,
    context: string,
  ): void {
    const candidates = freeBlocks(before).filter((b) => fits(b, size, alignment));
    const chosen = candidates.find((b) => address >= b.address && address < b.address + b.size);
    if (!chosen) {
      if (this.caps.placement !== 'any') {
        fail(
          'placement',
          `${hex(address)} for ${size} B lies in no free block that fits it, ${context}`,
        );
      }
      return;
    }
    let expected: LayoutBlock | undefined;
    for (const b of candidates) {
      if (expected === undefined) expected = b;
      else if (this.caps.placement === 'first-fit' && b.address < expected.address) expected = b;
      else if (
        this.caps.placement === 'best-fit' &&
        (b.size < expected.size || (b.size === expected.size && b.address < expected.address))
      )
        expected = b;
      else if (this.caps.placement === 'worst-fit' && b.size > expected.size) expected = b;
    }
    const ok =
      this.caps.placement === 'worst-fit'
        ? chosen.size === expected!.size
        : this.caps.placement === 'any' || chosen === expected;
    const lowest = Math.ceil(chosen.address / alignment) * alignment;
    if (
      ok &&
      this.caps.placement !== 'any' &&
      this.caps.placement !== 'worst-fit' &&
      address !== lowest
    ) {
      fail(
        'placement',
        `${this.caps.placement}: ${size} B went to ${hex(address)} inside the free block at ` +
          `${hex(chosen.address)}, not to its lowest aligned address ${hex(lowest)}, ${context}`,
      );
    }
    if (!ok) {
      fail(
        'placement',
        `${this.caps.placement}: ${size} B (alignment ${alignment}) went to the free block ` +
          `[${hex(chosen.address)}, +${chosen.size}) but [${hex(expected!.address)}, +${expected!.size}) ` +
          `was the one to use, ${context}`,
      );
    }
  }

  private checkNoOverlap(block: LiveBlock, context: string): void {
    const end = block.address + block.usable;
    for (const other of this.live) {
      if (block.address < other.address + other.usable && other.address < end) {
        fail(
          'no-overlap',
          `[${hex(block.address)}, +${block.usable}) overlaps the live block ` +
            `[${hex(other.address)}, +${other.usable}), ${context}`,
        );
      }
    }
  }

  private verifyPattern(block: LiveBlock, context: string): void {
    if (!this.view) return;
    const bytes = this.view(block.address, block.usable);
    for (let i = 0; i < bytes.length; i++) {
      if (bytes[i] !== block.fill) {
        fail(
          'byte-pattern',
          `byte ${i} of the block at ${hex(block.address)} is ${bytes[i]}, expected ${block.fill}: ` +
            `another block wrote into it, ${context}`,
        );
      }
    }
  }

  private free(index: number, context: string): void {
    const block = this.live[index]!;
    this.verifyPattern(block, context);
    this.allocator.free(block.address);
    this.live.splice(index, 1);
    this.freed.push(block.address);
    if (this.freed.length > 64) this.freed.shift();
    if (this.allocator.owns(block.address)) {
      fail('accounting', `owns(${hex(block.address)}) is still true after free, ${context}`);
    }
  }

  private misuse(op: Extract<Operation, { kind: 'misuse' }>, context: string): void {
    const a = this.allocator;
    const isLive = (address: number) => this.live.some((b) => b.address === address);
    let call: (() => unknown) | undefined;
    let expected: 'argument' | 'free' = 'argument';
    switch (op.variant) {
      case 'size-zero':
        call = () => a.allocate(0);
        break;
      case 'size-negative':
        call = () => a.allocate(-8);
        break;
      case 'size-fraction':
        call = () => a.allocate(10.5);
        break;
      case 'size-nan':
        call = () => a.allocate(Number.NaN);
        break;
      case 'size-unsafe':
        call = () => a.allocate(2 ** 53);
        break;
      case 'alignment-three':
        call = () => a.allocate(16, 3);
        break;
      case 'alignment-zero':
        call = () => a.allocate(16, 0);
        break;
      case 'double-free': {
        const candidates = this.freed.filter((x) => !isLive(x));
        const address = candidates[op.pick % Math.max(1, candidates.length)];
        if (address === undefined) return;
        expected = 'free';
        call = () => a.free(address);
        break;
      }
      case 'interior-free': {
        const block = this.live[op.pick % Math.max(1, this.live.length)];
        if (block === undefined || block.usable < 2) return;
        const inside = block.address + 1 + (op.pick % (block.usable - 1));
        expected = 'free';
        call = () => a.free(inside);
        break;
      }
      case 'foreign-free':
        expected = 'free';
        call = () => a.free(2 ** 53 - 1 - (op.pick % 4096));
        break;
      case 'nan-free':
        expected = 'free';
        call = () => a.free(Number.NaN);
        break;
      case 'usable-size-of-free': {
        const candidates = this.freed.filter((x) => !isLive(x));
        const address = candidates[op.pick % Math.max(1, candidates.length)];
        if (address === undefined) return;
        call = () => a.usableSize(address);
        break;
      }
    }
    if (!call) return;
    const before = fingerprint(a);
    let thrown: unknown;
    try {
      call();
    } catch (error) {
      thrown = error;
    }
    const ok =
      expected === 'free'
        ? InvalidFreeError.isInstance(thrown)
        : InvalidArgumentError.isInstance(thrown);
    if (!ok) {
      fail(
        'misuse',
        `${op.variant} should throw ${expected === 'free' ? 'InvalidFreeError' : 'InvalidArgumentError'} ` +
          `but ${thrown === undefined ? 'returned normally' : `threw ${String(thrown)}`}, ${context}`,
      );
    }
    const after = fingerprint(a);
    if (after !== before) {
      fail(
        'misuse',
        `${op.variant} threw but changed the state:\n  before ${before}\n  after  ${after}\n  ${context}`,
      );
    }
  }

  private reset(context: string): void {
    this.allocator.reset();
    this.live.length = 0;
    this.freed.length = 0;
    this.checkRestored(`reset() ${context}`);
  }

  private freeEverything(): void {
    while (this.live.length > 0) this.free(this.live.length - 1, 'while freeing everything');
    this.checkAccounting('after freeing everything');
    this.checkRestored('after freeing everything');
    if (this.caps.maximalAllocation && this.initialLargest > 0) {
      const address = this.allocator.allocate(this.initialLargest);
      if (address === null) {
        fail(
          'restores-initial-state',
          `a request of the initial largest free block (${this.initialLargest} B) failed after freeing everything`,
        );
      }
      this.allocator.free(address);
    }
  }

  private checkRestored(context: string): void {
    const u = this.allocator.usage();
    if (u.liveCount !== 0 || u.allocatedBytes !== 0) {
      fail('restores-initial-state', `nothing is live but usage says ${usageText(u)}, ${context}`);
    }
    if (this.caps.restoresInitialUsage) {
      for (const key of USAGE_KEYS) {
        if (u[key] !== this.initial[key]) {
          fail(
            'restores-initial-state',
            `${key} is ${u[key]}, initially ${this.initial[key]}: ${usageText(u)}, ${context}`,
          );
        }
      }
    }
    if (this.caps.coalesces) {
      const layout = this.allocator.layout?.();
      for (const segment of layout?.segments ?? []) {
        const whole =
          segment.blocks.length === 1 &&
          segment.blocks[0]!.free &&
          segment.blocks[0]!.address === segment.address &&
          segment.blocks[0]!.size === segment.size;
        if (!whole) {
          fail(
            'restores-initial-state',
            `segment [${hex(segment.address)}, +${segment.size}) is not one free block after everything ` +
              `was freed: ${JSON.stringify(segment.blocks.slice(0, 8))}, ${context}`,
          );
        }
      }
    }
  }

  private checkAccounting(context: string): void {
    const a = this.allocator;
    const u = a.usage();
    let sum = 0;
    for (const b of this.live) sum += b.usable;
    if (u.allocatedBytes !== sum) {
      fail(
        'accounting',
        `allocatedBytes is ${u.allocatedBytes} but live usable sizes add up to ${sum}, ${context}`,
      );
    }
    if (u.liveCount !== this.live.length) {
      fail(
        'accounting',
        `liveCount is ${u.liveCount} but ${this.live.length} blocks are live, ${context}`,
      );
    }
    if (u.allocatedBytes + u.freeBytes + u.overheadBytes !== u.capacity) {
      fail('accounting', `allocated + free + overhead ≠ capacity: ${usageText(u)}, ${context}`);
    }
    if (
      u.freeBytes < 0 ||
      u.overheadBytes < 0 ||
      u.largestFreeBlock > u.freeBytes ||
      u.largestFreeBlock < 0
    ) {
      fail('accounting', `impossible figures: ${usageText(u)}, ${context}`);
    }
    for (const b of this.live) {
      if (a.usableSize(b.address) !== b.usable) {
        fail(
          'usable-size',
          `usableSize(${hex(b.address)}) changed from ${b.usable} to ${a.usableSize(b.address)}, ${context}`,
        );
      }
    }
    const layout = a.layout?.();
    if (layout) this.checkLayout(layout, u, context);
  }

  private checkLayout(layout: Layout, u: Usage, context: string): void {
    const liveInLayout = new Map<number, number>();
    let freeSum = 0;
    let largest = 0;
    for (const segment of layout.segments) {
      let cursor = segment.address;
      let previousFreeEnd = Number.NaN;
      for (const b of segment.blocks) {
        if (this.caps.coalescesImmediately && b.free && b.address === previousFreeEnd) {
          fail(
            'coalescing',
            `free blocks [${hex(b.address - 1)}…) and [${hex(b.address)}, +${b.size}) are adjacent: ` +
              `a free did not merge with its neighbour, ${context}`,
          );
        }
        previousFreeEnd = b.free ? b.address + b.size : Number.NaN;
        if (b.address < cursor || b.address + b.size > segment.address + segment.size) {
          fail(
            'bounds',
            `layout block [${hex(b.address)}, +${b.size}) lies outside its segment ` +
              `[${hex(segment.address)}, +${segment.size}) or overlaps the block before it, ${context}`,
          );
        }
        cursor = b.address + b.size;
        if (b.free) {
          freeSum += b.size;
          if (b.size > largest) largest = b.size;
        } else {
          liveInLayout.set(b.address, b.size);
        }
      }
    }
    for (const b of this.live) {
      const size = liveInLayout.get(b.address);
      if (size === undefined) {
        fail(
          'bounds',
          `live block ${hex(b.address)} is missing from layout() or lies outside every segment, ${context}`,
        );
      }
      if (size < b.requested) {
        fail(
          'usable-size',
          `layout() gives the block at ${hex(b.address)} ${size} B, less than requested, ${context}`,
        );
      }
    }
    if (liveInLayout.size !== this.live.length) {
      fail(
        'accounting',
        `layout() shows ${liveInLayout.size} live blocks, the model ${this.live.length}, ${context}`,
      );
    }
    if (this.caps.layoutAccounting && (freeSum !== u.freeBytes || largest !== u.largestFreeBlock)) {
      fail(
        'accounting',
        `layout() has ${freeSum} free bytes (largest ${largest}) but usage() says ${u.freeBytes} ` +
          `(largest ${u.largestFreeBlock}), ${context}`,
      );
    }
  }
}

function describe(op: Operation): string {
  switch (op.kind) {
    case 'allocate':
      return `allocate ${op.scale} ${op.fraction.toFixed(3)} align#${op.alignIndex}`;
    case 'free':
      return `free #${op.pick}`;
    case 'misuse':
      return `misuse ${op.variant}`;
    case 'reset':
      return 'reset';
  }
}
