import { describe, expect, it } from 'vitest';
import { UnsupportedError } from './errors';
import { lazyModule } from './lazy-module';

describe('lazyModule', () => {
  it('loads on the first call only, and returns the same module after', () => {
    let loads = 0;
    const module = lazyModule(() => ({ loaded: ++loads }), 'x could not load y');
    expect(loads).toBe(0);
    expect(module()).toBe(module());
    expect(loads).toBe(1);
  });

  it('turns a failed load into UnsupportedError, and tries again next time', () => {
    let attempts = 0;
    const module = lazyModule(() => {
      attempts++;
      throw new Error('no build for this platform\nmore detail');
    }, '@allot/x could not load y (its FFI)');
    expect(() => module()).toThrowError(
      /^@allot\/x could not load y \(its FFI\) on \S+: no build for this platform$/,
    );
    expect(() => module()).toThrow(UnsupportedError);
    expect(attempts).toBe(2);
  });
});
