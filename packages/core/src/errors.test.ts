import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  AllotError,
  InvalidArgumentError,
  InvalidFreeError,
  OutOfMemoryError,
  UnsupportedError,
} from './errors';

describe('errors', () => {
  it('carry stable codes and tell fragmentation from exhaustion', () => {
    const fragmented = new OutOfMemoryError({
      requested: 1024,
      alignment: 8,
      capacity: 4096,
      freeBytes: 2048,
      largestFreeBlock: 512,
    });
    expect(fragmented.code).toBe('ALLOT_OUT_OF_MEMORY');
    expect(fragmented.reason).toBe('fragmentation');
    expect(fragmented.message).toContain('1.00 KiB');
    expect(fragmented.message).toContain('largest free block 512 B');
    const exhausted = new OutOfMemoryError({
      requested: 4096,
      alignment: 8,
      capacity: 4096,
      freeBytes: 2048,
      largestFreeBlock: 2048,
    });
    expect(exhausted.reason).toBe('exhaustion');
    expect(new InvalidFreeError(0x10, 'double-free').message).toMatch(/0x10.*double free/);
    expect(new InvalidArgumentError('alignment', 3, 'a power of two').message).toBe(
      'Invalid alignment: 3; expected a power of two.',
    );
  });

  it('keeps the documented class names in the built ESM and CJS bundles', async () => {
    const require = createRequire(import.meta.url);
    let cjs: typeof import('./index');
    let esm: typeof import('./index');
    try {
      cjs = require('../dist/index.cjs');
      // The built declarations are a second copy of the classes: the same shape, not the same type.
      esm = (await import('../dist/index.js')) as unknown as typeof import('./index');
    } catch {
      return; // dist is built before tests in the pipeline
    }
    for (const build of [cjs, esm]) {
      expect(
        new build.OutOfMemoryError({
          requested: 8,
          alignment: 8,
          capacity: 0,
          freeBytes: 0,
          largestFreeBlock: 0,
        }).name,
      ).toBe('OutOfMemoryError');
      expect(new build.InvalidFreeError(8, 'not-live').name).toBe('InvalidFreeError');
      expect(new build.InvalidArgumentError('size', 0, 'a size').name).toBe('InvalidArgumentError');
      expect(new build.UnsupportedError('no').name).toBe('UnsupportedError');
      expect(String(new build.InvalidFreeError(8, 'not-live'))).toMatch(/^InvalidFreeError: /);
    }
  });

  it('isInstance works across duplicated copies of the package (ESM vs CJS build)', async () => {
    const require = createRequire(import.meta.url);
    let cjs: typeof import('./index');
    try {
      cjs = require('../dist/index.cjs');
    } catch {
      return; // dist is built before tests in the pipeline; nothing to compare without it
    }
    const foreign = new cjs.InvalidFreeError(8, 'not-live');
    expect(foreign instanceof InvalidFreeError).toBe(false);
    expect(InvalidFreeError.isInstance(foreign)).toBe(true);
    expect(AllotError.isInstance(foreign)).toBe(true);
    expect(OutOfMemoryError.isInstance(foreign)).toBe(false);
    expect(cjs.UnsupportedError.isInstance(new UnsupportedError('no'))).toBe(true);
    expect(AllotError.isInstance({ code: 'ALLOT_INVALID_FREE' })).toBe(false);
    expect(AllotError.isInstance(null)).toBe(false);
  });
});
