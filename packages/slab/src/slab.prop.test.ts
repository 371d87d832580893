/**
 * Strategy properties of the slab allocator, checked against a model after every call: objects
 * never overlap and sit in the smallest class that holds them at their alignment, per-class figures
 * (live objects, full/partial/empty slabs, requested bytes) match the model and the layout, no more
 * than `maxEmptySlabs` empty slabs are held per class, every slab is a live block of the upstream,
 * requests above the largest class return null, and an upstream failure returns null with nothing
 * changed.
 *
 * Runs: FC_NUM_RUNS (default 100, 1,000 under ALLOT_FUZZ=1); FC_SEED and FC_PATH replay a failure.
 */
import assert from 'node:assert/strict';
import { buddy } from '@allot/buddy';
import { type Allocator, InvalidFreeError } from '@allot/core';
import { assertYielding, propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultSizeClasses, transformerSizeClasses } from './size-classes';
import { type Slab, slab } from './slab';

const parameters = propertyParameters({});

const BASE = 2 ** 40;

interface Config {
  readonly sizeClasses: readonly number[] | 'default' | 'transformer';
  readonly slabSize: number;
  readonly maxEmptySlabs: number;
}

type Command =
  | { readonly kind: 'allocate'; readonly scale: number; readonly alignShift: number | null }
  | { readonly kind: 'free'; readonly pick: number }
  | { readonly kind: 'misuse'; readonly pick: number; readonly how: number }
  | { readonly kind: 'upstream'; readonly failing: boolean };

const configArbitrary: fc.Arbitrary<Config> = fc.record({
  sizeClasses: fc.oneof(
    fc.constant('default' as const),
    fc.constant('transformer' as const),
    fc
      .uniqueArray(fc.integer({ min: 1, max: 8192 }), { minLength: 1, maxLength: 10 })
      .map((sizes) => [...sizes].sort((a, b) => a - b)),
  ),
  slabSize: fc.constantFrom(4096, 8192, 16_384),
  maxEmptySlabs: fc.integer({ min: 0, max: 3 }),
});

const commandArbitrary: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('allocate' as const),
      scale: fc.double({ min: 0, max: 1, noNaN: true }),
      alignShift: fc.option(fc.integer({ min: 0, max: 12 }), { nil: null }),
    }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('misuse' as const),
      pick: fc.nat(),
      how: fc.integer({ min: 0, max: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('upstream' as const), failing: fc.boolean() }),
  },
);

/** Passes through to `inner`, except that `allocate` returns null while `failing` is set. */
function failingUpstream(inner: Allocator): Allocator & { failing: boolean } {
  return {
    failing: false,
    alignment: inner.alignment,
    allocate(size, alignment) {
      return this.failing ? null : inner.allocate(size, alignment);
    },
    free: (address) => inner.free(address),
    usableSize: (address) => inner.usableSize(address),
    owns: (address) => inner.owns(address),
    usage: () => inner.usage(),
    reset: () => inner.reset(),
  };
}

function classesOf(config: Config): readonly number[] {
  if (config.sizeClasses === 'default') return defaultSizeClasses;
  if (config.sizeClasses === 'transformer') return transformerSizeClasses;
  return config.sizeClasses;
}

function alignmentOf(size: number): number {
  let p = 1;
  while (size % (p * 2) === 0) p *= 2;
  return p;
}

interface Live {
  readonly size: number;
  readonly classSize: number;
  readonly alignment: number;
}

function snapshot(objects: Slab, upstream: Allocator): unknown {
  return {
    usage: objects.usage(),
    layout: objects.layout(),
    stats: objects.classStats(),
    upstream: upstream.usage(),
  };
}

function check(objects: Slab, upstream: Allocator, config: Config, live: Map<number, Live>): void {
  const classes = classesOf(config);
  const layout = objects.layout();
  // Segments (slabs) are disjoint and each holds whole objects of one class.
  const perClass = new Map<
    number,
    { full: number; partial: number; empty: number; held: number }
  >();
  let previousEnd = -1;
  let freeBytes = 0;
  let liveInLayout = 0;
  for (const segment of layout.segments) {
    assert.ok(segment.address >= previousEnd, `slab at ${segment.address} overlaps the one before`);
    assert.equal(segment.address % config.slabSize, 0);
    previousEnd = segment.address + segment.size;
    const classSize = Number(segment.pool!.replace(' B', ''));
    assert.ok(classes.includes(classSize), `no class of ${classSize} B`);
    let liveHere = 0;
    segment.blocks.forEach((block, i) => {
      assert.equal(block.address, segment.address + i * classSize);
      assert.equal(block.size, classSize);
      if (block.free) {
        freeBytes += classSize;
      } else {
        const model = live.get(block.address);
        assert.ok(model !== undefined, `unexpected live object at ${block.address}`);
        assert.equal(model.classSize, classSize);
        assert.equal(block.requestedSize, model.size);
        liveHere++;
      }
    });
    liveInLayout += liveHere;
    const entry = perClass.get(classSize) ?? { full: 0, partial: 0, empty: 0, held: 0 };
    if (liveHere === 0) entry.empty++;
    else if (liveHere === segment.blocks.length) entry.full++;
    else entry.partial++;
    entry.held += segment.size;
    perClass.set(classSize, entry);
  }
  assert.equal(liveInLayout, live.size);
  // Objects never overlap.
  const spans = [...live].map(([address, l]) => [address, address + l.classSize] as const);
  spans.sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < spans.length; i++)
    assert.ok(
      spans[i]![0] >= spans[i - 1]![1],
      `objects at ${spans[i - 1]![0]} and ${spans[i]![0]} overlap`,
    );
  // Per-class figures match the model and the layout.
  const stats = objects.classStats();
  assert.deepEqual(
    stats.map((s) => s.size),
    [...classes],
  );
  let capacity = 0;
  let allocated = 0;
  for (const s of stats) {
    const mine = [...live.values()].filter((l) => l.classSize === s.size);
    const requested = mine.reduce((sum, l) => sum + l.size, 0);
    const counts = perClass.get(s.size) ?? { full: 0, partial: 0, empty: 0, held: 0 };
    assert.equal(s.liveObjects, mine.length);
    assert.equal(s.requestedBytes, requested);
    assert.equal(s.roundingWasteBytes, mine.length * s.size - requested);
    assert.deepEqual(
      [s.fullSlabs, s.partialSlabs, s.emptySlabs],
      [counts.full, counts.partial, counts.empty],
    );
    assert.ok(s.emptySlabs <= config.maxEmptySlabs, `${s.emptySlabs} empty slabs of ${s.size} B`);
    assert.equal(s.heldBytes, counts.held);
    capacity += s.heldBytes;
    allocated += mine.length * s.size;
  }
  const usage = objects.usage();
  assert.equal(usage.capacity, capacity);
  assert.equal(usage.allocatedBytes, allocated);
  assert.equal(usage.freeBytes, freeBytes);
  assert.equal(usage.allocatedBytes + usage.freeBytes + usage.overheadBytes, usage.capacity);
  assert.equal(usage.liveCount, live.size);
  // Every slab is a live block of the upstream, and nothing else is.
  assert.equal(upstream.usage().liveCount, layout.segments.length);
  assert.equal(upstream.usage().allocatedBytes, capacity);
  for (const [address, l] of live) {
    assert.equal(address % l.alignment, 0);
    assert.equal(objects.usableSize(address), l.classSize);
    assert.equal(objects.owns(address), true);
  }
}

function run(config: Config, commands: readonly Command[]): void {
  const source = buddy({ capacity: 2 ** 26, base: BASE, minBlockSize: 4096 });
  const upstream = failingUpstream(source);
  const objects = slab({ upstream, ...config });
  const classes = classesOf(config);
  const largest = classes[classes.length - 1]!;
  const live = new Map<number, Live>();
  const freed: number[] = [];
  for (const command of commands) {
    if (command.kind === 'upstream') {
      upstream.failing = command.failing;
      continue;
    }
    if (command.kind === 'allocate') {
      const size = Math.max(1, Math.round(2 ** (command.scale * Math.log2(largest * 1.25))));
      const asked = command.alignShift === null ? undefined : 2 ** command.alignShift;
      const alignment = Math.max(asked ?? 1, objects.alignment);
      const classSize = classes.find((c) => c >= size && alignmentOf(c) >= alignment);
      const stats = objects.classStats().find((s) => s.size === classSize);
      const before = snapshot(objects, upstream);
      const address = objects.allocate(size, asked);
      if (classSize === undefined) {
        // Above the largest class, or more alignment than any class guarantees.
        assert.equal(address, null);
      } else if (stats!.freeObjects > 0) {
        assert.notEqual(address, null, `a free object of ${classSize} B was not handed out`);
      } else if (upstream.failing) {
        assert.equal(address, null);
      }
      if (address === null) {
        assert.deepEqual(snapshot(objects, upstream), before);
      } else {
        assert.equal(objects.usableSize(address), classSize);
        live.set(address, { size, classSize: classSize!, alignment });
      }
    } else if (command.kind === 'free') {
      if (live.size === 0) continue;
      const keys = [...live.keys()];
      const address = keys[command.pick % keys.length]!;
      objects.free(address);
      live.delete(address);
      freed.push(address);
    } else {
      const keys = [...live.keys()];
      const candidates = [
        freed[command.pick % Math.max(1, freed.length)],
        keys.length > 0 ? keys[command.pick % keys.length]! + 1 : undefined,
        BASE - 1 - (command.pick % 4096),
        BASE + 2 ** 26 + (command.pick % 4096),
      ];
      const address = candidates[command.how];
      if (address === undefined || live.has(address)) continue;
      const before = snapshot(objects, upstream);
      assert.throws(() => objects.free(address), InvalidFreeError);
      assert.deepEqual(snapshot(objects, upstream), before);
    }
    check(objects, source, config, live);
  }
  // Freeing everything leaves at most maxEmptySlabs slabs per class, all empty.
  for (const address of live.keys()) objects.free(address);
  live.clear();
  check(objects, source, config, live);
  for (const s of objects.classStats()) {
    expect(s.fullSlabs + s.partialSlabs).toBe(0);
    expect(s.emptySlabs).toBeLessThanOrEqual(config.maxEmptySlabs);
  }
  objects.reset();
  expect(source.usage().liveCount).toBe(0);
}

describe('slab properties', () => {
  it('keeps objects apart, classes exact and figures true to a model', async () => {
    await assertYielding(
      fc.property(configArbitrary, fc.array(commandArbitrary, { maxLength: 80, size: 'max' }), run),
      parameters,
    );
  });

  it('sends every request above the largest class away with null', async () => {
    await assertYielding(
      fc.property(configArbitrary, fc.integer({ min: 1, max: 2 ** 40 }), (config, extra) => {
        const source = buddy({ capacity: 2 ** 24, base: BASE, minBlockSize: 4096 });
        const objects = slab({ upstream: source, ...config });
        const before = objects.usage();
        expect(objects.allocate(objects.maxRequestSize + extra)).toBeNull();
        expect(objects.usage()).toEqual(before);
        expect(source.usage().liveCount).toBe(0);
      }),
      parameters,
    );
  });
});
