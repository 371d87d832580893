/**
 * What a conformance scenario checks after each command: placement, overlap, the fill pattern of
 * live blocks, usage accounting, the layout, and the initial state after everything is freed. The
 * scenario that drives the commands is `scenario.ts`.
 */
import type { Allocator, Layout, LayoutBlock, Usage } from '@allot/core';
import { fail, hex } from './conformance-error';
import type { Capabilities, ConformanceSubject } from './options';

export interface LiveBlock {
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

export const USAGE_KEYS: readonly (keyof Usage)[] = [
  'capacity',
  'allocatedBytes',
  'freeBytes',
  'overheadBytes',
  'largestFreeBlock',
  'liveCount',
  'freeBlockCount',
];

export function usageText(u: Usage): string {
  return USAGE_KEYS.map((k) => `${k}=${u[k]}`).join(' ');
}

export function fingerprint(allocator: Allocator): string {
  const layout = allocator.layout?.();
  return `${usageText(allocator.usage())}|${layout ? JSON.stringify(layout) : ''}`;
}

export function fits(block: LayoutBlock, size: number, alignment: number): boolean {
  const start = Math.ceil(block.address / alignment) * alignment;
  return start + size <= block.address + block.size;
}

export function freeBlocks(layout: Layout): LayoutBlock[] {
  const out: LayoutBlock[] = [];
  for (const segment of layout.segments) for (const b of segment.blocks) if (b.free) out.push(b);
  return out;
}

/** The checks of a conformance scenario, over the blocks it holds live. */
export abstract class ScenarioChecks {
  protected readonly allocator: Allocator;
  protected readonly view: ConformanceSubject['view'];
  /** The blocks the scenario holds live, in allocation order. */
  protected readonly live: LiveBlock[] = [];
  protected readonly initial: Usage;
  protected readonly initialLargest: number;

  constructor(
    protected readonly name: string,
    subject: ConformanceSubject,
    protected readonly caps: ResolvedCapabilities,
  ) {
    this.allocator = subject.allocator;
    this.view = subject.view;
    this.initial = this.allocator.usage();
    this.initialLargest = this.initial.largestFreeBlock;
    this.checkAccounting('initial state');
  }

  protected checkPlacement(
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

  protected checkNoOverlap(block: LiveBlock, context: string): void {
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

  protected verifyPattern(block: LiveBlock, context: string): void {
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

  protected checkRestored(context: string): void {
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

  protected checkAccounting(context: string): void {
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

  protected checkLayout(layout: Layout, u: Usage, context: string): void {
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
