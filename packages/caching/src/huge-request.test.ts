import { OutOfMemoryError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { cachingPool } from './caching-pool';
import { recordingSource } from './test-support/recording-source';

describe('requests too large to round', () => {
  it.each([
    ['2^53 - 1', Number.MAX_SAFE_INTEGER],
    ['2^53 - 512', Number.MAX_SAFE_INTEGER - 511],
    ['2^52 + 1', 2 ** 52 + 1],
  ])('%s bytes: null, not a throw', (_, size) => {
    const pool = cachingPool({ source: recordingSource() });
    expect(pool.allocate(size)).toBeNull();
    const divided = cachingPool({
      source: recordingSource(),
      config: 'roundup_power2_divisions:4',
    });
    expect(divided.allocate(size)).toBeNull();
    expect(pool.allocate(1024)).not.toBeNull();
  });

  it('allocateOrThrow says out of memory', () => {
    const pool = cachingPool({ source: recordingSource() });
    expect(() => pool.allocateOrThrow(Number.MAX_SAFE_INTEGER)).toThrow(OutOfMemoryError);
  });
});
