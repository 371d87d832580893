/**
 * Runs a command sequence against a fresh allocator and a simple model of its live blocks,
 * checking every invariant of DESIGN.md after each command. Returns the addresses it received, so
 * a second run can check determinism.
 */
import { InvalidArgumentError, InvalidFreeError } from '@allot/core';
import { fail, hex } from './conformance-error';
import type { Operation } from './operations';
import { fingerprint, fits, freeBlocks, type LiveBlock, ScenarioChecks } from './scenario-checks';

export { type ResolvedCapabilities, resolveCapabilities, subjectOf } from './scenario-checks';

export class Scenario extends ScenarioChecks {
  /** Addresses freed lately (at most 64), for the misuse commands that free one again. */
  private readonly freed: number[] = [];
  private serial = 0;
  /** Every address `allocate` returned, in order (`null` for refusals): the determinism record. */
  readonly addresses: (number | null)[] = [];

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
