/**
 * limit: cap the bytes live in `upstream` at `maxBytes` (counted as usable sizes, as the upstream
 * reports them). A request that would pass the cap returns `null`, so `fallback` composes with it.
 */
import type { Adaptor, Allocator, Usage } from '../allocator';
import { checkNonNegativeInteger, checkRequest } from '../validate';

export interface LimitOptions {
  /** Most bytes (sum of usable sizes) that may be live at once. */
  readonly maxBytes: number;
}

export interface Limited<Upstream extends Allocator> extends Adaptor<Upstream> {
  readonly maxBytes: number;
  /** Bytes live through this adaptor now. */
  readonly liveBytes: number;
}

export function limit<Upstream extends Allocator>(
  upstream: Upstream,
  options: LimitOptions,
): Limited<Upstream> {
  const { maxBytes } = options;
  checkNonNegativeInteger(maxBytes, 'maxBytes');
  let live = 0;
  let count = 0;
  const self: Limited<Upstream> = {
    upstream,
    maxBytes,
    get liveBytes() {
      return live;
    },
    alignment: upstream.alignment,
    allocate(size: number, align?: number): number | null {
      checkRequest(size, align, upstream.alignment);
      if (size > maxBytes - live) return null;
      const address = upstream.allocate(size, align);
      if (address === null) return null;
      const usable = upstream.usableSize(address);
      if (usable > maxBytes - live) {
        upstream.free(address);
        return null;
      }
      live += usable;
      count++;
      return address;
    },
    free(address: number): void {
      const usable = upstream.owns(address) ? upstream.usableSize(address) : 0;
      upstream.free(address); // throws InvalidFreeError before we touch our counters
      live -= usable;
      count--;
    },
    usableSize: (address) => upstream.usableSize(address),
    owns: (address) => upstream.owns(address),
    usage(): Usage {
      const u = upstream.usage();
      const capacity = Math.min(maxBytes, u.capacity);
      const freeBytes = Math.max(0, Math.min(u.freeBytes, capacity - live));
      return {
        capacity,
        allocatedBytes: live,
        freeBytes,
        overheadBytes: capacity - live - freeBytes,
        largestFreeBlock: Math.min(u.largestFreeBlock, freeBytes),
        liveCount: count,
        freeBlockCount: u.freeBlockCount,
      };
    },
    reset(): void {
      upstream.reset();
      live = 0;
      count = 0;
    },
  };
  if (upstream.layout) {
    const walk = upstream.layout.bind(upstream);
    return Object.assign(self, { layout: walk });
  }
  return self;
}
