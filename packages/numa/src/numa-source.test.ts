import { InvalidArgumentError, UnsupportedError } from '@allot/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CudaHooks } from './cuda-hooks';
import { NativeCallError } from './errors';
import { numaNative } from './ffi/native';
import { type NumaSource, numaSource } from './numa-source';
import { memoryPolicy, placement } from './placement';
import { BACKENDS, canLock, MiB } from './test-support/environment';
import { topology } from './topology';

const sources: NumaSource[] = [];
function track(source: NumaSource): NumaSource {
  sources.push(source);
  return source;
}
afterEach(() => {
  for (const source of sources.splice(0)) source.close();
});

describe.each(BACKENDS)('numaSource through $name', ({ libnuma }) => {
  it('uses the backend asked for', () => {
    const source = track(numaSource({ node: 0, libnuma }));
    if (libnuma) {
      // libnuma is installed on the test machines; say so clearly where it is not.
      expect(source.backend, source.libnumaNotes.join('; ')).toBe('libnuma');
    } else {
      expect(source.backend).toBe('syscall');
      expect(source.libnumaNotes).toEqual(['skipped: libnuma: false']);
    }
  });

  it('maps memory bound to node 0 with every page on node 0', () => {
    const source = track(numaSource({ node: 0, libnuma }));
    const region = source.acquire(4 * MiB + 1)!;
    expect(region).not.toBeNull();
    const pageSize = numaNative({ libnuma }).pageSize;
    expect(region.size).toBe(4 * MiB + pageSize);
    expect(region.address % pageSize).toBe(0);
    expect(region.node).toBe(0);
    expect(region.policy).toBe('bind');
    expect(memoryPolicy(region, { libnuma })).toEqual({ mode: 'bind', nodes: [0] });

    const where = placement(region, { libnuma });
    expect(where.pages).toBe(region.size / pageSize);
    expect(where.byNode).toEqual({ 0: where.pages });
    expect(where.notPresent).toBe(0);
    expect(where.failed).toEqual({});
    expect(source.reservedBytes()).toBe(region.size);
  });

  it('leaves pages unallocated without prefault, and they land on node 0 when touched', () => {
    const source = track(numaSource({ node: 0, libnuma, prefault: false }));
    const region = source.acquire(1 * MiB)!;
    const before = placement(region, { libnuma });
    expect(before.notPresent).toBe(before.pages);
    expect(before.byNode).toEqual({});
    region.bytes.fill(1);
    const after = placement(region, { libnuma });
    expect(after.byNode).toEqual({ 0: after.pages });
  });

  it('binds with the preferred policy', () => {
    const source = track(numaSource({ node: 0, libnuma, policy: 'preferred' }));
    const region = source.acquire(64 * 1024)!;
    expect(region.policy).toBe('preferred');
    expect(memoryPolicy(region, { libnuma })).toEqual({ mode: 'preferred', nodes: [0] });
  });

  it('reads and writes through cached typed views', () => {
    const source = track(numaSource({ node: 0, libnuma }));
    const region = source.acquire(256 * 1024)!;
    expect(region.bytes.byteLength).toBe(region.size);
    expect(region.bytes.buffer).toBe(region.buffer);
    const floats = new Float64Array(region.buffer, 4096, 16);
    floats.set([1.5, -2.25, 3]);
    const view = source.view(region.address + 4096, 24);
    expect(view.buffer).toBe(region.buffer); // no new external buffer per view
    const back = new Float64Array(view.buffer, view.byteOffset, 3);
    expect([...back]).toEqual([1.5, -2.25, 3]);
    view.fill(0, 0, 8);
    expect(floats[0]).toBe(0);
    const tail = source.view(region.address + region.size - 8, 8);
    tail.set([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(region.bytes[region.size - 1]).toBe(8);
    expect(() => source.view(region.address + region.size - 8, 9)).toThrow(InvalidArgumentError);
    expect(() => source.view(region.address - 1, 1)).toThrow(InvalidArgumentError);
  });

  it('keeps regions apart and releases them (unmapped: placement reports EFAULT)', () => {
    const source = track(numaSource({ node: 0, libnuma }));
    const a = source.acquire(64 * 1024)!;
    const b = source.acquire(64 * 1024)!;
    a.bytes.fill(0xaa);
    b.bytes.fill(0xbb);
    expect(a.bytes.every((x) => x === 0xaa)).toBe(true);
    expect(b.bytes.every((x) => x === 0xbb)).toBe(true);
    expect(source.regions().map((r) => r.address)).toEqual(
      [a.address, b.address].sort((x, y) => x - y),
    );
    const { address, size } = a;
    source.release(a);
    expect(source.reservedBytes()).toBe(b.size);
    expect(source.regions()).toEqual([b]);
    expect(() => source.release(a)).toThrow(InvalidArgumentError);
    expect(() => source.view(address, 1)).toThrow(InvalidArgumentError);
    // The range is unmapped (unless the kernel reused it in between, which nothing here does).
    const gone = placement({ address, size }, { libnuma });
    expect(gone.byNode).toEqual({});
    expect(gone.failed).toEqual({ EFAULT: gone.pages });
    source.release(b);
    expect(source.reservedBytes()).toBe(0);
  });

  it('returns null past its limit', () => {
    const source = track(numaSource({ node: 0, libnuma, limit: 128 * 1024 }));
    expect(source.acquire(100 * 1024)).not.toBeNull();
    expect(source.acquire(64 * 1024)).toBeNull();
  });

  it('page-locks with mlock, and unlocks on release', () => {
    if (!canLock(2 * MiB)) {
      console.warn('skipped: this process may not lock 2 MiB more (RLIMIT_MEMLOCK)');
      return;
    }
    const source = track(numaSource({ node: 0, libnuma, pin: 'mlock' }));
    const region = source.acquire(2 * MiB)!;
    expect(region.pinned).toBe('mlock');
    expect(source.lockedBytes()).toBe(2 * MiB);
    expect(placement(region, { libnuma }).byNode).toEqual({ 0: (2 * MiB) / 4096 });
    source.release(region);
    expect(source.lockedBytes()).toBe(0);
  });

  it('page-locks through CUDA hooks when asked, and unregisters on release', () => {
    const calls: string[] = [];
    const cuda: CudaHooks = {
      hostRegister: (address, size) => calls.push(`register ${address} ${size}`),
      hostUnregister: (address) => calls.push(`unregister ${address}`),
    };
    const source = track(numaSource({ node: 0, libnuma, pin: 'cuda', cuda }));
    const region = source.acquire(8192)!;
    expect(region.pinned).toBe('cuda');
    source.release(region);
    expect(calls).toEqual([
      `register ${region.address} ${region.size}`,
      `unregister ${region.address}`,
    ]);
  });

  it('unmaps when CUDA registration fails, and lets the error through', () => {
    const cuda: CudaHooks = {
      hostRegister: () => {
        throw new Error('cudaErrorHostMemoryAlreadyRegistered');
      },
      hostUnregister: () => {},
    };
    const source = track(numaSource({ node: 0, libnuma, pin: 'cuda', cuda }));
    expect(() => source.acquire(8192)).toThrow('cudaErrorHostMemoryAlreadyRegistered');
    expect(source.reservedBytes()).toBe(0);
  });

  it('gives huge pages: explicit when reserved, else transparent', () => {
    const source = track(numaSource({ node: 0, libnuma, hugePages: true }));
    expect(source.granularity).toBe(2 * MiB);
    const region = source.acquire(1)!;
    expect(region.size).toBe(2 * MiB);
    expect(['explicit', 'transparent', 'none']).toContain(region.hugePages);
    expect(region.address % (2 * MiB)).toBe(0);
    expect(placement(region, { libnuma }).byNode).toEqual({ 0: (2 * MiB) / 4096 });
    const thp = track(numaSource({ node: 0, libnuma, hugePages: 'transparent' }));
    const t = thp.acquire(3 * MiB)!;
    expect(t.size).toBe(4 * MiB);
    expect(t.address % (2 * MiB)).toBe(0);
    expect(placement(t, { libnuma }).byNode).toEqual({ 0: (4 * MiB) / 4096 });
  });
});

describe('a kernel without NUMA calls, on one node', () => {
  const enosys = (call: string) => () => {
    throw new NativeCallError(call, [], 38, 'ENOSYS', 'Function not implemented');
  };

  it('maps unbound memory and reports resident pages on the one node', () => {
    const native = numaNative({ libnuma: false });
    const mbind = vi.spyOn(native, 'mbind').mockImplementation(enosys('mbind'));
    const movePages = vi.spyOn(native, 'movePages').mockImplementation(enosys('move_pages'));
    try {
      const source = track(numaSource({ node: 0, libnuma: false, prefault: false }));
      const region = source.acquire(64 * 1024)!;
      expect(region.policy).toBe('default');
      const untouched = placement(region, { libnuma: false });
      expect(untouched).toMatchObject({ method: 'single-node', byNode: {}, notPresent: 16 });
      region.bytes.fill(3, 0, 8192);
      expect(placement(region, { libnuma: false })).toMatchObject({
        method: 'single-node',
        byNode: { 0: 2 },
        notPresent: 14,
      });
    } finally {
      mbind.mockRestore();
      movePages.mockRestore();
    }
    expect(placement({ address: 4096, size: 1 }, { libnuma: false }).method).toBe('move_pages');
  });
});

describe('numaSource: bad input', () => {
  it('refuses a node that does not exist, listing the nodes there are', () => {
    const nodes = topology().memoryNodes().join(', ');
    for (const node of [99, -1, 0.5, Number.NaN]) {
      let caught: unknown;
      try {
        numaSource({ node });
      } catch (error) {
        caught = error;
      }
      expect(InvalidArgumentError.isInstance(caught)).toBe(true);
      expect((caught as Error).message).toContain(
        `a NUMA node with memory on this machine: ${nodes}`,
      );
    }
  });

  it('refuses a node without memory', () => {
    const fake = topology();
    const cpuOnly = {
      ...fake,
      memoryNodes: () => [0],
      nodes: [...fake.nodes, { id: 1, cpus: [4], memoryTotal: 0, memoryFree: 0, hasMemory: false }],
    };
    expect(() => numaSource({ node: 1, topology: cpuOnly })).toThrow(/nodes without memory: 1/);
  });

  it('checks its options', () => {
    expect(() => numaSource({ node: 0, policy: 'interleave' as never })).toThrow(
      InvalidArgumentError,
    );
    expect(() => numaSource({ node: 0, pin: 'yes' as never })).toThrow(InvalidArgumentError);
    expect(() => numaSource({ node: 0, hugePages: 'always' as never })).toThrow(
      InvalidArgumentError,
    );
    expect(() => numaSource({ node: 0, limit: -1 })).toThrow(InvalidArgumentError);
    expect(() => numaSource({ node: 0, pin: 'cuda' })).toThrow(/loadCudaHooks/);
    const source = track(numaSource({ node: 0 }));
    expect(() => source.acquire(0)).toThrow(InvalidArgumentError);
    expect(() => source.acquire(1.5)).toThrow(InvalidArgumentError);
    expect(() => source.release({ address: 1 } as never)).toThrow(InvalidArgumentError);
  });

  it('says "not supported" off Linux, at use', () => {
    const original = Object.getOwnPropertyDescriptor(process, 'platform')!;
    Object.defineProperty(process, 'platform', { value: 'darwin' });
    try {
      expect(() => numaSource({ node: 0 })).toThrow(UnsupportedError);
      expect(() => numaSource({ node: 0 })).toThrow(/Linux only; this is darwin/);
      expect(() => placement({ address: 4096, size: 4096 })).toThrow(UnsupportedError);
      // Topology still answers: one node.
      const topo = topology();
      expect(topo.numa).toBe(false);
      expect(topo.memoryNodes()).toEqual([0]);
    } finally {
      Object.defineProperty(process, 'platform', original);
    }
  });

  it('names the call, its arguments and errno when the kernel refuses', () => {
    const native = numaNative({ libnuma: false });
    let caught: unknown;
    try {
      native.unmap(4097, 4096); // not page-aligned
    } catch (error) {
      caught = error;
    }
    expect(NativeCallError.isInstance(caught)).toBe(true);
    const error = caught as NativeCallError;
    expect(error.call).toBe('munmap');
    expect(error.errnoName).toBe('EINVAL');
    expect(error.message).toMatch(/^munmap\(0x1001, 4\.00 KiB\) failed: EINVAL \(22\) /);
  });
});
