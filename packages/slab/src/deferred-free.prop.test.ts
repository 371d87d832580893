/**
 * A free of the object the last allocation returned may be deferred (`SlabAllocator.free`). Nothing
 * may tell: a slab driven by random calls, never observed between them, must return what a twin
 * that settles after every call returns, make the same upstream calls in the same order, and leave
 * its upstream in the same state after every call, read from the upstream directly (which does not
 * settle anything). Same-size pairs, frees of the object just allocated, aligned requests, double
 * frees, resets and upstream failures are drawn often, and slabs hold a few objects each so that they fill,
 * empty, change places on their lists and go back upstream.
 *
 * Runs: FC_NUM_RUNS (default 100, 1,000 under ALLOT_FUZZ=1); FC_SEED and FC_PATH replay a failure.
 */
import { buddy } from '@allot/buddy';
import type { Allocator } from '@allot/core';
import { assertYielding, propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Slab, slab } from './slab';

const parameters = propertyParameters({});

const BASE = 2 ** 40;
/** Sizes asked, few so that one is asked again often; 4 KiB slabs hold 4 to 64 of them. */
const SIZES = [64, 200, 1000] as const;

type Command =
  | { readonly kind: 'allocate'; readonly size: number; readonly aligned: boolean }
  | { readonly kind: 'free-last' }
  | { readonly kind: 'free'; readonly pick: number }
  | { readonly kind: 'free-again'; readonly pick: number }
  | { readonly kind: 'observe'; readonly pick: number }
  | { readonly kind: 'reset' }
  | { readonly kind: 'upstream'; readonly failing: boolean };

const commandArbitrary: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('allocate' as const),
      size: fc.constantFrom(...SIZES),
      aligned: fc.constant(false),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('allocate' as const),
      size: fc.constantFrom(...SIZES),
      aligned: fc.constant(true),
    }),
  },
  { weight: 5, arbitrary: fc.constant({ kind: 'free-last' as const }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('free-again' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('observe' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reset' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('upstream' as const), failing: fc.boolean() }),
  },
);

/** A buddy heap that logs every call made of it and fails allocations while `failing` is set. */
function loggedUpstream(): Allocator & { failing: boolean; readonly log: string[] } {
  const inner = buddy({ capacity: 2 ** 22, base: BASE, minBlockSize: 4096 });
  const log: string[] = [];
  return {
    failing: false,
    log,
    alignment: inner.alignment,
    allocate(size, alignment) {
      const address = this.failing ? null : inner.allocate(size, alignment);
      log.push(`allocate ${size} ${alignment} → ${address}`);
      return address;
    },
    free(address) {
      log.push(`free ${address}`);
      inner.free(address);
    },
    usableSize: (address) => inner.usableSize(address),
    owns: (address) => inner.owns(address),
    usage: () => inner.usage(),
    reset: () => inner.reset(),
  };
}

/** What a call did: its result, or the name and message of what it threw. */
function outcome(call: () => unknown): unknown {
  try {
    return { value: call() };
  } catch (error) {
    return { error: (error as Error).name, message: (error as Error).message };
  }
}

function run(maxEmptySlabs: number, commands: readonly Command[]): void {
  const sides = [loggedUpstream(), loggedUpstream()].map((upstream) => ({
    upstream,
    objects: slab({ upstream, slabSize: 4096, maxEmptySlabs }) as Slab,
  }));
  const [subject, twin] = sides as [(typeof sides)[0], (typeof sides)[0]];
  const live: number[] = [];
  const freed: number[] = [];
  let last: number | null = null;
  /** Calls `call` on both sides (the twin settles after it) and requires the same outcome. */
  const both = (call: (objects: Slab) => unknown): unknown => {
    const mine = outcome(() => call(subject.objects));
    const theirs = outcome(() => call(twin.objects));
    twin.objects.usage(); // settles whatever the call deferred
    expect(mine).toEqual(theirs);
    return mine;
  };
  for (const command of commands) {
    switch (command.kind) {
      case 'upstream':
        subject.upstream.failing = command.failing;
        twin.upstream.failing = command.failing;
        break;
      case 'allocate': {
        const alignment = command.aligned ? 512 : undefined;
        const { value } = both((o) => o.allocate(command.size, alignment)) as { value: number };
        last = value;
        if (value !== null) live.push(value);
        break;
      }
      case 'free-last':
      case 'free': {
        const index = command.kind === 'free' ? command.pick % live.length : live.indexOf(last!);
        if (live.length === 0 || index < 0) break;
        const [address] = live.splice(index, 1) as [number];
        both((o) => o.free(address));
        freed.push(address);
        break;
      }
      case 'free-again': {
        const address = freed[command.pick % freed.length];
        if (address === undefined || live.includes(address)) break;
        const result = both((o) => o.free(address)) as { error?: string };
        expect(result.error).toBe('InvalidFreeError');
        break;
      }
      case 'reset':
        both((o) => o.reset());
        live.length = 0;
        break;
      case 'observe': {
        // A live object, or one of the last freed (the one whose free waits, often); owns first.
        const address =
          (command.pick % 2 === 0
            ? live[(command.pick >> 1) % Math.max(1, live.length)]
            : freed[freed.length - 1 - ((command.pick >> 1) % 3)]) ?? BASE;
        both((o) => o.owns(address));
        both((o) => [o.usage(), o.classStats()]);
        break;
      }
    }
    expect(subject.upstream.log).toEqual(twin.upstream.log);
    expect(subject.upstream.usage()).toEqual(twin.upstream.usage());
  }
  expect(subject.objects.layout()).toEqual(twin.objects.layout());
  for (const address of live) both((o) => o.free(address));
  expect(subject.upstream.log).toEqual(twin.upstream.log);
  expect(subject.objects.classStats()).toEqual(twin.objects.classStats());
}

describe('deferred free', () => {
  it('changes no address, figure or upstream call against a twin that settles after every call', async () => {
    await assertYielding(
      fc.property(
        fc.integer({ min: 0, max: 2 }),
        fc.array(commandArbitrary, { maxLength: 120, size: 'max' }),
        run,
      ),
      parameters,
    );
  });

  it("settles a free whose slab is no longer its class's head before the same size is asked", () => {
    // Four 1000-byte objects fill a 4 KiB slab; the fifth starts a second slab, which is the head
    // until a free in the first (full) slab puts that one ahead of it.
    const allocate = { kind: 'allocate', size: 1000, aligned: false } as const;
    run(1, [
      allocate,
      allocate,
      allocate,
      allocate,
      allocate,
      { kind: 'free', pick: 0 },
      { kind: 'free-last' },
      allocate,
      allocate,
    ]);
  });

  it('takes the object back for the same size, and a double free of it is still refused', () => {
    const objects = slab({
      upstream: buddy({ capacity: 2 ** 22, base: BASE, minBlockSize: 4096 }),
    });
    const a = objects.allocate(64)!;
    expect(objects.owns(a)).toBe(true);
    objects.free(a);
    expect(objects.owns(a)).toBe(false);
    expect(objects.allocate(64)).toBe(a);
    objects.free(a);
    expect(() => objects.free(a)).toThrow(/double free/i);
    expect(objects.usage().liveCount).toBe(0);
    expect(objects.owns(a)).toBe(false);
  });
});
