/**
 * Compaction as a plan the caller carries out (as VMA and PlayCanvas do): the allocator proposes
 * moves (from, to, size) that slide live blocks toward the start of its range, the caller copies
 * the bytes, and the allocator's bookkeeping then follows. These properties copy real bytes as each
 * plan says and check that every live block still holds its own data, that plans respect their
 * limits, and that repeated passes leave one free block at the end of the range.
 */
import type { Allocator, Layout } from '@allot/core';
import fc from 'fast-check';
import { assertProperty, assertPropertyYielding, propertyParameters } from './check-conformance';
import { fail, hex } from './conformance-error';

/** One move of a plan: copy `size` bytes from `from` to `to` (ranges may overlap). */
export interface CompactionMoveLike {
  readonly from: number;
  readonly to: number;
  readonly size: number;
}

/** What `compact()` returns; the allocator may carry more (a generation, totals). */
export interface CompactionPlanLike {
  readonly moves: readonly CompactionMoveLike[];
}

/** An allocator that plans compaction for its caller. */
export interface CompactingAllocator<P extends CompactionPlanLike = CompactionPlanLike>
  extends Allocator {
  compact(options?: { readonly maxMoves?: number; readonly maxBytes?: number }): P;
  applyCompaction(plan: P): void;
  layout(): Layout;
}

export interface CompactionCheckOptions {
  readonly name: string;
  /** A fresh allocator managing one segment (its `layout()` has exactly one). */
  readonly create: () => CompactingAllocator;
  /** Largest request generated, in bytes. @defaultValue 3000 */
  readonly maxRequestSize?: number;
  /** Alignments requests may ask for; `undefined` is the allocator's default. */
  readonly alignments?: readonly (number | undefined)[];
  readonly numRuns?: number;
  readonly seed?: number;
  readonly path?: string;
}

interface Live {
  address: number;
  readonly size: number;
  readonly tag: number;
}

type Op =
  | { readonly kind: 'allocate'; readonly size: number; readonly alignIndex: number }
  | { readonly kind: 'free'; readonly pick: number }
  | { readonly kind: 'compact'; readonly maxMoves?: number; readonly maxBytes?: number };

/** Bytes of the allocator's one segment, addressed by allocator address. */
class Memory {
  readonly bytes: Uint8Array;
  readonly base: number;

  constructor(layout: Layout) {
    const segment = layout.segments[0];
    if (!segment || layout.segments.length !== 1) {
      throw new Error('checkCompaction needs an allocator whose layout has exactly one segment');
    }
    this.base = segment.address;
    this.bytes = new Uint8Array(segment.size);
  }

  fill(block: Live): void {
    const at = block.address - this.base;
    for (let i = 0; i < block.size; i++) this.bytes[at + i] = (block.tag * 31 + i) % 256;
  }

  verify(block: Live, context: string): void {
    const at = block.address - this.base;
    for (let i = 0; i < block.size; i++) {
      if (this.bytes[at + i] !== (block.tag * 31 + i) % 256) {
        fail(
          'compaction',
          `block #${block.tag} now at ${hex(block.address)} lost byte ${i}, ${context}`,
        );
      }
    }
  }
}

/** Carries a plan out on `memory`, applies it, and checks every live block; returns its moves. */
function carryOut(
  a: CompactingAllocator,
  memory: Memory,
  live: Live[],
  limits: { readonly maxMoves?: number; readonly maxBytes?: number },
  context: string,
): number {
  const plan = a.compact(limits);
  const moved = new Map<number, number>();
  let bytes = 0;
  for (const m of plan.moves) {
    if (!(m.to < m.from) || m.to < memory.base) {
      fail(
        'compaction',
        `move ${hex(m.from)} → ${hex(m.to)} does not slide toward the start, ${context}`,
      );
    }
    if (m.size !== a.usableSize(m.from)) {
      fail(
        'compaction',
        `move of ${hex(m.from)} copies ${m.size} B, not the block's usable size, ${context}`,
      );
    }
    memory.bytes.copyWithin(
      m.to - memory.base,
      m.from - memory.base,
      m.from - memory.base + m.size,
    );
    moved.set(m.from, m.to);
    bytes += m.size;
  }
  if (limits.maxMoves !== undefined && plan.moves.length > limits.maxMoves) {
    fail(
      'compaction',
      `${plan.moves.length} moves planned with maxMoves ${limits.maxMoves}, ${context}`,
    );
  }
  if (limits.maxBytes !== undefined && bytes > limits.maxBytes) {
    fail('compaction', `${bytes} B planned with maxBytes ${limits.maxBytes}, ${context}`);
  }
  a.applyCompaction(plan);
  for (const block of live) {
    block.address = moved.get(block.address) ?? block.address;
    if (!a.owns(block.address)) {
      fail(
        'compaction',
        `block #${block.tag} is not live at ${hex(block.address)} after the plan, ${context}`,
      );
    }
    memory.verify(block, context);
  }
  return plan.moves.length;
}

/** A property and the name its failures carry. */
// biome-ignore lint/suspicious/noExplicitAny: each property draws values of its own type
type NamedProperty = readonly [string, fc.IProperty<any>];

/** The properties of {@link checkCompaction}. */
function compactionProperties(options: CompactionCheckOptions): NamedProperty[] {
  const alignments = options.alignments ?? [undefined, 1, 8, 64, 256];
  const maxRequest = options.maxRequestSize ?? 3000;
  const op: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('allocate' as const),
        size: fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: maxRequest })),
        alignIndex: fc.nat({ max: alignments.length - 1 }),
      }),
    },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }) },
    {
      weight: 1,
      arbitrary: fc.record(
        {
          kind: fc.constant('compact' as const),
          maxMoves: fc.nat({ max: 4 }),
          maxBytes: fc.nat({ max: 2 * maxRequest }),
        },
        { requiredKeys: ['kind'] },
      ),
    },
  );

  const plans = [
    `${options.name} compaction`,
    fc.property(fc.array(op, { maxLength: 150, size: 'max' }), (ops) => {
      const a = options.create();
      const memory = new Memory(a.layout());
      const live: Live[] = [];
      let tag = 0;
      ops.forEach((o, i) => {
        const context = `after command ${i}`;
        if (o.kind === 'allocate') {
          const address = a.allocate(o.size, alignments[o.alignIndex]);
          if (address === null) return;
          const block = { address, size: o.size, tag: tag++ };
          memory.fill(block);
          live.push(block);
        } else if (o.kind === 'free') {
          if (live.length === 0) return;
          const [block] = live.splice(o.pick % live.length, 1);
          memory.verify(block!, context);
          a.free(block!.address);
        } else {
          carryOut(a, memory, live, o, context);
        }
      });
    }),
  ] as const;

  const toOneFreeBlock = [
    `${options.name} compaction to one free block`,
    fc.property(
      fc.array(fc.integer({ min: 1, max: Math.min(600, maxRequest) }), {
        minLength: 1,
        maxLength: 40,
        size: 'max',
      }),
      fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
      fc.nat({ max: 3 }),
      (sizes, keep, maxMoves) => {
        const a = options.create();
        const memory = new Memory(a.layout());
        // Allocate everything first, then free the blocks not kept: the holes stay between them.
        const made: Live[] = [];
        sizes.forEach((size, tag) => {
          const address = a.allocate(size);
          if (address === null) return;
          const block = { address, size, tag };
          memory.fill(block);
          made.push(block);
        });
        const live = made.filter((block) => keep[block.tag]);
        for (const block of made) if (!keep[block.tag]) a.free(block.address);
        let passes = 0;
        while (carryOut(a, memory, live, { maxMoves: maxMoves + 1 }, `pass ${passes}`) > 0) {
          if (++passes > sizes.length)
            fail('compaction', `still moving blocks after ${passes} passes`);
        }
        const segment = a.layout().segments[0]!;
        const free = segment.blocks.filter((b) => b.free);
        const last = free[0];
        if (
          free.length > 1 ||
          (last && last.address + last.size !== segment.address + segment.size)
        ) {
          fail(
            'compaction',
            `after ${passes} passes the free space is ${free.length} blocks, not one at the end: ` +
              JSON.stringify(free.slice(0, 4)),
          );
        }
      },
    ),
  ] as const;
  return [plans, toOneFreeBlock];
}

/**
 * Checks an allocator's compaction plans (see the module comment).
 * @throws ConformanceError with invariant `compaction` (seed and replay path in the message).
 */
export function checkCompaction(options: CompactionCheckOptions): void {
  const params = propertyParameters(options);
  for (const [name, property] of compactionProperties(options)) {
    assertProperty(name, property, params);
  }
}

/**
 * {@link checkCompaction} with the same runs, letting go of the event loop every 50 ms or so
 * (see `yielding`): for a test runner whose worker must keep answering.
 */
export async function checkCompactionAsync(options: CompactionCheckOptions): Promise<void> {
  const params = propertyParameters(options);
  for (const [name, property] of compactionProperties(options)) {
    await assertPropertyYielding(name, property, params);
  }
}
