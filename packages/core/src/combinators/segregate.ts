/**
 * segregate: route requests by size. Requests of at most `threshold` bytes go to `small`, larger
 * ones to `large`; a free goes to whichever child owns the address. A child that returns `null`
 * is final here: wrap a child in `fallback` to try the other one too.
 *
 * The children must manage disjoint memory; `usage()` adds their figures together.
 */
import type { Allocator, Layout, Usage } from '../allocator';
import { InvalidArgumentError, InvalidFreeError } from '../errors';
import { labelledLayout, sumUsage } from '../usage';
import { checkNonNegativeInteger, checkRequest } from '../validate';

export interface SegregateOptions<Small extends Allocator, Large extends Allocator> {
  /** Largest request size, in bytes, that goes to `small`. */
  readonly threshold: number;
  readonly small: Small;
  readonly large: Large;
}

export interface Segregated<Small extends Allocator, Large extends Allocator> extends Allocator {
  readonly threshold: number;
  readonly small: Small;
  readonly large: Large;
}

export function segregate<Small extends Allocator, Large extends Allocator>(
  options: SegregateOptions<Small, Large>,
): Segregated<Small, Large> {
  const { threshold, small, large } = options;
  checkNonNegativeInteger(threshold, 'threshold');
  if (small === (large as Allocator)) {
    throw new InvalidArgumentError(
      'small',
      'the same allocator as large',
      'two distinct allocators',
    );
  }
  const alignment = Math.min(small.alignment, large.alignment);
  const layout =
    small.layout || large.layout
      ? (): Layout =>
          labelledLayout([
            { pool: 'small', layout: small.layout?.bind(small) },
            { pool: 'large', layout: large.layout?.bind(large) },
          ])
      : undefined;
  return {
    threshold,
    small,
    large,
    alignment,
    allocate(size: number, align?: number): number | null {
      checkRequest(size, align, alignment);
      return size <= threshold ? small.allocate(size, align) : large.allocate(size, align);
    },
    free(address: number): void {
      if (small.owns(address)) small.free(address);
      else if (large.owns(address)) large.free(address);
      else throw new InvalidFreeError(address, 'not-live', 'owned by neither child of segregate');
    },
    usableSize(address: number): number {
      return small.owns(address) ? small.usableSize(address) : large.usableSize(address);
    },
    owns(address: number): boolean {
      return small.owns(address) || large.owns(address);
    },
    usage(): Usage {
      return sumUsage([small.usage(), large.usage()]);
    },
    reset(): void {
      small.reset();
      large.reset();
    },
    ...(layout ? { layout } : {}),
  };
}
