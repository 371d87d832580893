/**
 * Strategy properties of the buddy heap, checked against a model after every call: blocks aligned
 * to their own size, buddies fully merged, the smallest sufficient block split, refusal only when no
 * free block of a sufficient order exists, every maximal block whole again once all is freed, and
 * one heap seen through two views of a shared state buffer. Configurations range from a few units
 * to 2^48 bytes at addresses up to 2^52.
 *
 * Runs: FC_NUM_RUNS (default 100, 1,000 under ALLOT_FUZZ=1); FC_SEED and FC_PATH replay a failure.
 */
import assert from 'node:assert/strict';
import { InvalidFreeError, type LayoutBlock } from '@allot/core';
import { assertYielding, propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Buddy, buddy } from './buddy';
import { buddyStateBytes, powerOfTwoDividing } from './config';

const parameters = propertyParameters({});

interface Config {
  readonly capacity: number;
  readonly base: number;
  readonly minBlockSize: number;
  readonly maxBlockSize?: number;
}

type Command =
  | { readonly kind: 'allocate'; readonly scale: number; readonly alignShift: number | null }
  | { readonly kind: 'free'; readonly pick: number }
  | { readonly kind: 'misuse'; readonly pick: number; readonly how: number };

const configArbitrary: fc.Arbitrary<Config> = fc
  .record({
    unitShift: fc.oneof(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 20, max: 36 })),
    units: fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 65, max: 4096 })),
    tail: fc.double({ min: 0, max: 0.999, noNaN: true }),
    maxOrderCap: fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined }),
    base: fc.constantFrom(0, 2 ** 33, 2 ** 40, 2 ** 52, 3 * 2 ** 32 + 4096 * 7, 12_345),
  })
  .map(({ unitShift, units, tail, maxOrderCap, base }) => {
    const minBlockSize = 2 ** unitShift;
    const capacity = units * minBlockSize + Math.floor(tail * minBlockSize);
    let maxBlockSize: number | undefined;
    if (maxOrderCap !== undefined) {
      maxBlockSize = minBlockSize;
      while (maxBlockSize * 2 <= capacity && maxBlockSize < minBlockSize * 2 ** maxOrderCap) {
        maxBlockSize *= 2;
      }
    }
    const fitsBase = base + capacity <= 2 ** 53 ? base : 0;
    return { capacity, base: fitsBase, minBlockSize, ...(maxBlockSize ? { maxBlockSize } : {}) };
  });

const commandArbitrary: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('allocate' as const),
      scale: fc.double({ min: 0, max: 1, noNaN: true }),
      alignShift: fc.option(fc.integer({ min: 0, max: 12 }), { nil: null }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('misuse' as const),
      pick: fc.nat(),
      how: fc.integer({ min: 0, max: 3 }),
    }),
  },
);

interface Live {
  readonly size: number;
  readonly alignment: number;
}

function nextPowerOfTwo(value: number): number {
  let p = 1;
  while (p < value) p *= 2;
  return p;
}

/** Buddy offset of a block at `offset` (relative to base) of `size` bytes, by BigInt XOR. */
function buddyOffset(offset: number, size: number): number {
  return Number(BigInt(offset) ^ BigInt(size));
}

function freeBlocks(heap: Buddy): LayoutBlock[] {
  return heap.layout().segments.flatMap((s) => s.blocks.filter((b) => b.free));
}

/** Checks the heap against the model and the buddy invariants; returns nothing, throws on failure. */
function checkHeap(heap: Buddy, config: Config, live: Map<number, Live>): void {
  const unit = config.minBlockSize;
  const units = Math.floor(config.capacity / unit);
  const layout = heap.layout();
  let allocated = 0;
  let requested = 0;
  let freeBytes = 0;
  let freeCount = 0;
  let largest = 0;
  const seenLive = new Set<number>();
  for (const segment of layout.segments) {
    let at = segment.address;
    const freeHere = new Map<number, number>();
    for (const block of segment.blocks) {
      assert.equal(block.address, at);
      at += block.size;
      const offset = block.address - config.base;
      // A power-of-two number of units, aligned to its own size relative to base.
      assert.equal(block.size % unit, 0);
      assert.equal(nextPowerOfTwo(block.size / unit), block.size / unit);
      assert.equal(offset % block.size, 0);
      if (block.free) {
        freeBytes += block.size;
        freeCount++;
        largest = Math.max(largest, block.size);
        freeHere.set(offset, block.size);
      } else {
        const model = live.get(block.address);
        assert.ok(model !== undefined, `unexpected live block at ${block.address}`);
        assert.equal(block.requestedSize, model.size);
        assert.equal(
          block.size,
          Math.max(unit, nextPowerOfTwo(Math.max(model.size, model.alignment))),
        );
        assert.equal(block.address % model.alignment, 0);
        assert.equal(heap.owns(block.address), true);
        assert.equal(heap.usableSize(block.address), block.size);
        allocated += block.size;
        requested += model.size;
        seenLive.add(block.address);
      }
    }
    assert.equal(at, segment.address + segment.size);
    // Fully merged: no free block has a free buddy of the same size inside its maximal block.
    for (const [offset, size] of freeHere) {
      if (size >= segment.size) continue;
      assert.notEqual(
        freeHere.get(buddyOffset(offset, size)),
        size,
        `unmerged buddies at ${offset}`,
      );
    }
  }
  assert.equal(seenLive.size, live.size);
  const usage = heap.usage();
  assert.deepEqual(usage, {
    capacity: config.capacity,
    allocatedBytes: allocated,
    freeBytes,
    overheadBytes: config.capacity - units * unit,
    largestFreeBlock: largest,
    liveCount: live.size,
    freeBlockCount: freeCount,
  });
  const stats = heap.stats();
  assert.equal(stats.requestedBytes, requested);
  assert.equal(stats.internalFragmentationBytes, allocated - requested);
}

/** Runs `commands`, checking every step; `views` take turns serving the calls. */
function runCommands(
  views: readonly Buddy[],
  config: Config,
  commands: readonly Command[],
): number[] {
  const heap = views[0]!;
  const live = new Map<number, Live>();
  const freed: number[] = [];
  const addresses: number[] = [];
  const baseAlignment = powerOfTwoDividing(config.base);
  const maxBlock = heap.maxBlockSize;
  const initial = { usage: heap.usage(), layout: heap.layout() };
  commands.forEach((command, step) => {
    const view = views[step % views.length]!;
    if (command.kind === 'allocate') {
      const size = Math.max(1, Math.floor(2 ** (command.scale * Math.log2(2 * maxBlock))));
      const alignment = command.alignShift === null ? undefined : 2 ** command.alignShift;
      const effective = Math.max(alignment ?? 1, heap.alignment);
      const need = Math.max(unitOf(config), nextPowerOfTwo(Math.max(size, effective)));
      const before = freeBlocks(heap);
      const address = view.allocate(size, alignment);
      addresses.push(address ?? -1);
      const sufficient = before.filter((b) => b.size >= need);
      if (address === null) {
        // Refused only when no free block of a sufficient order exists (or the alignment is
        // beyond what base allows, or the request beyond maxBlockSize).
        if (effective <= baseAlignment && need <= maxBlock) assert.deepEqual(sufficient, []);
      } else {
        assert.ok(
          effective <= baseAlignment,
          `alignment ${effective} beyond the base's ${baseAlignment}`,
        );
        // Taken from a smallest sufficient free block.
        const smallest = Math.min(...sufficient.map((b) => b.size));
        const source = before.find((b) => b.address <= address && address < b.address + b.size);
        assert.equal(source?.size, smallest);
        live.set(address, { size, alignment: effective });
      }
    } else if (command.kind === 'free') {
      if (live.size === 0) return;
      const keys = [...live.keys()];
      const address = keys[command.pick % keys.length]!;
      view.free(address);
      live.delete(address);
      freed.push(address);
    } else {
      const keys = [...live.keys()];
      const candidates = [
        freed[command.pick % Math.max(1, freed.length)],
        keys.length > 0 ? keys[command.pick % keys.length]! + 1 : undefined,
        config.base - 1 - (command.pick % 4096),
        config.base + config.capacity + (command.pick % 4096),
      ];
      const address = candidates[command.how];
      if (address === undefined || live.has(address)) return;
      const before = { usage: heap.usage(), layout: heap.layout() };
      assert.throws(() => view.free(address), InvalidFreeError);
      assert.equal(view.owns(address), false);
      assert.deepEqual({ usage: heap.usage(), layout: heap.layout() }, before);
    }
    checkHeap(heap, config, live);
  });
  // Freeing everything makes every maximal block whole again.
  for (const address of live.keys()) heap.free(address);
  const layout = heap.layout();
  for (const segment of layout.segments) {
    expect(segment.blocks).toEqual([{ address: segment.address, size: segment.size, free: true }]);
  }
  expect({ usage: heap.usage(), layout }).toEqual(initial);
  return addresses;
}

function unitOf(config: Config): number {
  return config.minBlockSize;
}

describe('buddy properties', () => {
  it('keeps blocks aligned, merged and accounted; refuses only when no block is large enough', async () => {
    await assertYielding(
      fc.property(
        configArbitrary,
        fc.array(commandArbitrary, { maxLength: 80, size: 'max' }),
        (config, commands) => {
          runCommands([buddy(config)], config, commands);
        },
      ),
      parameters,
    );
  });

  it('is one heap through two views of a shared state buffer, and deterministic', async () => {
    await assertYielding(
      fc.property(
        configArbitrary,
        fc.array(commandArbitrary, { maxLength: 60, size: 'max' }),
        (config, commands) => {
          const alone = runCommands([buddy(config)], config, commands);
          const state = new SharedArrayBuffer(buddyStateBytes(config));
          const first = buddy({ ...config, state });
          const second = buddy.attach(state, config);
          const shared = runCommands([first, second], config, commands);
          expect(shared).toEqual(alone);
          expect(second.usage()).toEqual(first.usage());
        },
      ),
      { ...parameters, numRuns: Math.max(1, Math.ceil((parameters.numRuns ?? 100) / 4)) },
    );
  });

  it('serves large capacities (2^40 and more) at addresses above 2^32', async () => {
    const configs = fc.record({
      capacityShift: fc.integer({ min: 40, max: 48 }),
      unitShift: fc.integer({ min: 24, max: 36 }),
      base: fc.constantFrom(2 ** 32, 2 ** 44, 2 ** 52),
    });
    await assertYielding(
      fc.property(
        configs,
        fc.array(commandArbitrary, { maxLength: 60, size: 'max' }),
        (c, commands) => {
          const config: Config = {
            capacity: 2 ** c.capacityShift + 2 ** c.unitShift * 3,
            base: c.base,
            minBlockSize: 2 ** Math.max(c.unitShift, c.capacityShift - 14),
          };
          const addresses = runCommands([buddy(config)], config, commands);
          for (const address of addresses) {
            if (address !== -1) expect(address).toBeGreaterThanOrEqual(2 ** 32);
          }
        },
      ),
      parameters,
    );
  });
});
