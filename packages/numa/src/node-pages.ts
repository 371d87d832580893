/**
 * NodePages: the system calls behind one NUMA source's `acquire` and `release`, with the source's
 * settings fixed: map (with huge pages when asked), bind to the node, page-lock, and undo.
 *
 * ```
 *  map(size)          mmap; huge pages: MAP_HUGETLB, else 2 MiB-aligned + MADV_HUGEPAGE, else none
 *  bind(addr, size)   mbind(MPOL_BIND | MPOL_PREFERRED, [node]); unbound on a one-node kernel
 *                     without NUMA calls (ENOSYS, EPERM)
 *  lock(addr, size)   mlock, or cudaHostRegister; refused beyond RLIMIT_MEMLOCK → MemlockLimitError
 *  unlock(region)     munlock, or cudaHostUnregister
 * ```
 */
import { alignUp } from '@allot/core';
import type { CudaHooks } from './cuda-hooks';
import { MemlockLimitError, NativeCallError } from './errors';
import { MADV_HUGEPAGE, MPOL_BIND, MPOL_PREFERRED } from './ffi/constants';
import type { NumaNative } from './ffi/native';
import { hasIpcLock, lockedBytes } from './process-status';

/** How strictly memory stays on the node. */
export type NumaPolicy = 'bind' | 'preferred';

/** How regions are page-locked. */
export type PinMode = 'mlock' | 'cuda' | false;

/** Which huge pages a region got. */
export type HugePageKind = 'explicit' | 'transparent' | 'none';

/** What a {@link NodePages} is fixed to: the source's resolved options. */
export interface NodePagesSettings {
  readonly native: NumaNative;
  readonly node: number;
  readonly policy: NumaPolicy;
  readonly hugePages: boolean | 'transparent';
  /** Huge page size in bytes (0 without huge pages). */
  readonly hugeSize: number;
  readonly pin: PinMode;
  readonly cuda: CudaHooks | null;
  /** Whether the machine has one memory node (binding may then be skipped). */
  readonly singleNode: boolean;
}

export class NodePages {
  constructor(private readonly settings: NodePagesSettings) {}

  /** A mapping of `size` bytes and the huge pages it got, or null when the kernel is out of memory. */
  map(size: number): { address: number; kind: HugePageKind } | null {
    const { native, hugePages, hugeSize } = this.settings;
    if (hugePages === true) {
      const address = native.map(size, true);
      if (address !== null) return { address, kind: 'explicit' };
    }
    if (hugePages === false) {
      const address = native.map(size, false);
      return address === null ? null : { address, kind: 'none' };
    }
    // Transparent huge pages need 2 MiB-aligned ranges: map one huge page more, trim both ends.
    const raw = native.map(size + hugeSize, false);
    if (raw === null) return null;
    const start = alignUp(raw, hugeSize);
    if (start > raw) native.unmap(raw, start - raw);
    const tail = raw + size + hugeSize - (start + size);
    if (tail > 0) native.unmap(start + size, tail);
    let kind: HugePageKind = 'transparent';
    try {
      native.madvise(start, size, MADV_HUGEPAGE);
    } catch (error) {
      if (!NativeCallError.isInstance(error)) throw error;
      kind = 'none'; // THP disabled in this kernel: base pages serve
    }
    return { address: start, kind };
  }

  /** Binds the range; false when the kernel has no NUMA calls and there is only one node. */
  bind(address: number, size: number): boolean {
    const { native, policy, node, singleNode } = this.settings;
    try {
      native.mbind(address, size, policy === 'bind' ? MPOL_BIND : MPOL_PREFERRED, [node]);
      return true;
    } catch (error) {
      const unavailable =
        NativeCallError.isInstance(error) &&
        (error.errnoName === 'ENOSYS' || error.errnoName === 'EPERM');
      if (unavailable && singleNode) return false; // every page is on the one node anyway
      throw error;
    }
  }

  /**
   * Page-locks the range; false when the kernel is out of memory to lock it with.
   * @param lockedBySource bytes the source holds locked already (for the error's figures)
   * @throws MemlockLimitError when `RLIMIT_MEMLOCK` refuses it.
   */
  lock(address: number, size: number, lockedBySource: number): boolean {
    const { native, pin, cuda } = this.settings;
    if (pin === 'cuda') {
      cuda!.hostRegister(address, size);
      return true;
    }
    try {
      native.mlock(address, size);
      return true;
    } catch (error) {
      if (!NativeCallError.isInstance(error)) throw error;
      const refused = ['ENOMEM', 'EPERM', 'EAGAIN'].includes(error.errnoName);
      if (refused && !hasIpcLock()) {
        const limits = native.memlockLimit();
        const already = lockedBytes();
        if (already + size > limits.soft) {
          throw new MemlockLimitError(
            {
              requested: size,
              limit: limits.soft,
              hardLimit: limits.hard,
              lockedBytes: already,
              lockedBySource,
            },
            { cause: error },
          );
        }
      }
      if (error.errnoName === 'ENOMEM' || error.errnoName === 'EAGAIN') return false;
      throw error;
    }
  }

  /** Undoes {@link lock} for a region locked as `region.pinned` says. */
  unlock(region: {
    readonly address: number;
    readonly size: number;
    readonly pinned: PinMode;
  }): void {
    const { native, cuda } = this.settings;
    if (region.pinned === 'cuda') cuda!.hostUnregister(region.address);
    else if (region.pinned === 'mlock') native.munlock(region.address, region.size);
  }
}
