/**
 * A pool's starting state, as {@link CachingPool.restore} takes it: the segments a process already
 * held and the blocks live in them. A replay of a PyTorch memory snapshot begins here, because the
 * recording started after the model's weights were in memory; a user resuming from a snapshot wants
 * the same thing.
 *
 * ```
 *  segment (size, pool, stream)   offset 0                                            size
 *                                 │ block (requested → size) │ free gap │ block │ free │
 * ```
 *
 * Gaps between blocks become cached free blocks, merged as the pool would have merged them. A block
 * whose `size` is not given gets the size the pool's own policy gives its request (rounding), plus
 * the gap after it when the split rule would have kept that remainder attached (a large-pool
 * remainder of 1 MiB or less, or any remainder of an oversize block).
 */
import { InvalidArgumentError } from '@allot/core';
import { MIN_BLOCK_SIZE } from './constants';
import type { Stream } from './stream-source';

/** A block live when the state was taken. */
export interface PoolStateBlock {
  /** Bytes from the segment's start: a multiple of 512. */
  readonly offset: number;
  /** Bytes the caller asked for. */
  readonly requested: number;
  /**
   * Bytes of the block (a multiple of 512, at least `requested`), when known; otherwise the pool
   * derives it from `requested` (see the module comment).
   */
  readonly size?: number;
}

/** A segment held when the state was taken. */
export interface PoolStateSegment {
  /** Bytes of the segment: a positive multiple of 512. */
  readonly size: number;
  /** Which pool the segment belongs to: `small` (blocks ≤ 1 MiB) or `large`. */
  readonly pool: 'small' | 'large';
  /** Stream the segment's blocks are cached on. @defaultValue 0 */
  readonly stream?: Stream;
  /**
   * An expandable segment: it keeps growing in place when the pool has expandable segments and its
   * source can grow; otherwise it is restored as a plain segment. @defaultValue false
   */
  readonly expandable?: boolean;
  /** Live blocks in ascending `offset` order, none overlapping another or the segment's end. */
  readonly blocks: readonly PoolStateBlock[];
}

function isMultiple(value: unknown, unit: number, min: number): value is number {
  return (
    typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value % unit === 0
  );
}

/**
 * Checks a starting state before anything changes.
 * @throws InvalidArgumentError naming the segment and block at fault.
 */
export function checkPoolState(segments: readonly PoolStateSegment[]): void {
  if (!Array.isArray(segments)) {
    throw new InvalidArgumentError('segments', segments, 'an array of segments');
  }
  segments.forEach((segment, s) => {
    const at = `segments[${s}]`;
    if (segment === null || typeof segment !== 'object') {
      throw new InvalidArgumentError(at, segment, 'a segment object');
    }
    if (!isMultiple(segment.size, MIN_BLOCK_SIZE, MIN_BLOCK_SIZE)) {
      throw new InvalidArgumentError(`${at}.size`, segment.size, 'a positive multiple of 512');
    }
    if (segment.pool !== 'small' && segment.pool !== 'large') {
      throw new InvalidArgumentError(`${at}.pool`, segment.pool, "'small' or 'large'");
    }
    const stream = segment.stream ?? 0;
    if (!Number.isSafeInteger(stream) || stream < 0) {
      throw new InvalidArgumentError(`${at}.stream`, stream, 'a non-negative integer');
    }
    if (!Array.isArray(segment.blocks)) {
      throw new InvalidArgumentError(`${at}.blocks`, segment.blocks, 'an array of blocks');
    }
    let end = 0;
    segment.blocks.forEach((block: PoolStateBlock, i: number) => {
      const where = `${at}.blocks[${i}]`;
      if (!isMultiple(block?.offset, MIN_BLOCK_SIZE, 0) || block.offset < end) {
        throw new InvalidArgumentError(
          `${where}.offset`,
          block?.offset,
          `a multiple of 512 at or after ${end}, the end of the block before`,
        );
      }
      if (!isMultiple(block.requested, 1, 1)) {
        throw new InvalidArgumentError(`${where}.requested`, block.requested, 'a positive integer');
      }
      const size = block.size ?? block.requested;
      if (
        (block.size !== undefined && !isMultiple(block.size, MIN_BLOCK_SIZE, MIN_BLOCK_SIZE)) ||
        size < block.requested
      ) {
        throw new InvalidArgumentError(
          `${where}.size`,
          block.size,
          'a positive multiple of 512 of at least the requested bytes',
        );
      }
      end = block.offset + size;
      if (end > segment.size) {
        throw new InvalidArgumentError(
          where,
          `${size} bytes at offset ${block.offset}`,
          `a block inside the segment's ${segment.size} bytes`,
        );
      }
    });
  });
}
