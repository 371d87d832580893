/**
 * fallback: ask `primary`; when it returns `null`, ask `secondary`. A free goes to whichever of
 * the two owns the address, so each block returns to the allocator that issued it. The two must
 * manage disjoint memory; `usage()` adds their figures together.
 */
import type { Allocator, Layout, Usage } from '../allocator';
import { InvalidArgumentError, InvalidFreeError } from '../errors';
import { labelledLayout, sumUsage } from '../usage';
import { checkRequest } from '../validate';

export interface Fallback<Primary extends Allocator, Secondary extends Allocator>
  extends Allocator {
  readonly primary: Primary;
  readonly secondary: Secondary;
}

export function fallback<Primary extends Allocator, Secondary extends Allocator>(
  primary: Primary,
  secondary: Secondary,
): Fallback<Primary, Secondary> {
  if (primary === (secondary as Allocator)) {
    throw new InvalidArgumentError(
      'secondary',
      'the same allocator as primary',
      'two distinct allocators',
    );
  }
  const alignment = Math.min(primary.alignment, secondary.alignment);
  const layout =
    primary.layout || secondary.layout
      ? (): Layout =>
          labelledLayout([
            { pool: 'primary', layout: primary.layout?.bind(primary) },
            { pool: 'secondary', layout: secondary.layout?.bind(secondary) },
          ])
      : undefined;
  return {
    primary,
    secondary,
    alignment,
    allocate(size: number, align?: number): number | null {
      checkRequest(size, align, alignment);
      return primary.allocate(size, align) ?? secondary.allocate(size, align);
    },
    free(address: number): void {
      if (primary.owns(address)) primary.free(address);
      else if (secondary.owns(address)) secondary.free(address);
      else throw new InvalidFreeError(address, 'not-live', 'owned by neither side of fallback');
    },
    usableSize(address: number): number {
      return primary.owns(address) ? primary.usableSize(address) : secondary.usableSize(address);
    },
    owns(address: number): boolean {
      return primary.owns(address) || secondary.owns(address);
    },
    usage(): Usage {
      return sumUsage([primary.usage(), secondary.usage()]);
    },
    reset(): void {
      primary.reset();
      secondary.reset();
    },
    ...(layout ? { layout } : {}),
  };
}
