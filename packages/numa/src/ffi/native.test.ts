import { describe, expect, it } from 'vitest';
import { numaSource } from '../numa-source';
import { placement } from '../placement';
import { numaNative } from './native';

describe('choosing the NUMA backend', () => {
  it('skips libnuma when ALLOT_NUMA_NO_LIBNUMA=1, unless the option says otherwise', () => {
    const env = { ALLOT_NUMA_NO_LIBNUMA: '1' };
    const native = numaNative({ env });
    expect(native.backend).toBe('syscall');
    expect(native.libnumaNotes).toEqual(['skipped: ALLOT_NUMA_NO_LIBNUMA=1 in the environment']);
    expect(numaNative({ env, libnuma: true }).backend).toBe('libnuma');
    const source = numaSource({ node: 0, env });
    try {
      expect(source.backend).toBe('syscall');
      const region = source.acquire(65536)!;
      expect(placement(region, { env }).byNode).toEqual({ 0: 16 });
    } finally {
      source.close();
    }
  });

  it('falls back to system calls when libnuma is not where it is said to be', () => {
    const native = numaNative({ env: { ALLOT_LIBNUMA_PATH: '/nonexistent/libnuma.so.1' } });
    expect(native.backend).toBe('syscall');
    expect(native.libnumaNotes[0]).toMatch(/^\/nonexistent\/libnuma\.so\.1: /);
    expect(native.libnumaNotes[1]).toContain('set ALLOT_LIBNUMA_PATH');
  });

  it('names the paths searched and the variable to set when libc cannot be found', async () => {
    // A fresh module graph, so the libc cache is empty.
    const { vi } = await import('vitest');
    vi.resetModules();
    const fresh = await import('./native');
    expect(() => fresh.numaNative({ env: { ALLOT_LIBC_PATH: '/nonexistent/libc.so.6' } })).toThrow(
      /Searched:\n {2}\/nonexistent\/libc\.so\.6: .*\nSet ALLOT_LIBC_PATH/s,
    );
  });
});
