/**
 * The commands of the model-based suite and their fast-check generators. Sizes are generated as
 * fractions and scaled when run, because the allocator's capacity is known only then.
 */
import fc from 'fast-check';

export type Operation =
  /** allocate(size, alignments[alignIndex]); `scale` picks small, medium or capacity-sized requests. */
  | {
      readonly kind: 'allocate';
      readonly scale: 'small' | 'medium' | 'large';
      readonly fraction: number;
      readonly alignIndex: number;
    }
  /** Free the live block at `pick` (modulo the live count). */
  | { readonly kind: 'free'; readonly pick: number }
  /** A call that must throw and change nothing. */
  | { readonly kind: 'misuse'; readonly variant: MisuseVariant; readonly pick: number }
  /** reset(): everything is forgotten. */
  | { readonly kind: 'reset' };

export type MisuseVariant =
  | 'size-zero'
  | 'size-negative'
  | 'size-fraction'
  | 'size-nan'
  | 'size-unsafe'
  | 'alignment-three'
  | 'alignment-zero'
  | 'double-free'
  | 'interior-free'
  | 'foreign-free'
  | 'nan-free'
  | 'usable-size-of-free';

const MISUSE: readonly MisuseVariant[] = [
  'size-zero',
  'size-negative',
  'size-fraction',
  'size-nan',
  'size-unsafe',
  'alignment-three',
  'alignment-zero',
  'double-free',
  'interior-free',
  'foreign-free',
  'nan-free',
  'usable-size-of-free',
];

export function operationArbitrary(alignmentChoices: number): fc.Arbitrary<Operation> {
  const allocate = fc.record({
    kind: fc.constant('allocate' as const),
    scale: fc.constantFrom('small' as const, 'small' as const, 'medium' as const, 'large' as const),
    fraction: fc.double({ min: 0, max: 1, noNaN: true }),
    alignIndex: fc.nat({ max: alignmentChoices - 1 }),
  });
  const free = fc.record({ kind: fc.constant('free' as const), pick: fc.nat() });
  const misuse = fc.record({
    kind: fc.constant('misuse' as const),
    variant: fc.constantFrom(...MISUSE),
    pick: fc.nat(),
  });
  const reset = fc.constant({ kind: 'reset' as const });
  return fc.oneof(
    { arbitrary: allocate, weight: 50 },
    { arbitrary: free, weight: 35 },
    { arbitrary: misuse, weight: 10 },
    { arbitrary: reset, weight: 1 },
  );
}
