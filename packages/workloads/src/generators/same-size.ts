/**
 * Same-size pairs: allocate a block, free it at once, repeat. The cheapest possible pattern; it
 * measures the fixed cost of one `allocate` plus one `free` (a slab or free-list pop and push, or a
 * tree search and a coalesce) with no fragmentation at all.
 */
import { type Trace, TraceBuilder } from '../trace';
import { checkInteger } from './check-options';

/** Options of {@link sameSizePairs}. */
export interface SameSizePairsOptions {
  /** Bytes per request. */
  readonly size: number;
  /** Number of alloc+free pairs. @defaultValue 100_000 */
  readonly pairs?: number;
  /** Alignment of each request, 0 for the allocator's default. @defaultValue 0 */
  readonly alignment?: number;
}

/** `pairs` × (allocate `size` bytes, free them). Peak live bytes is `size`. */
export function sameSizePairs(options: SameSizePairsOptions): Trace {
  const { size, pairs = 100_000, alignment = 0 } = options;
  checkInteger('size', size, 1);
  checkInteger('pairs', pairs, 1);
  const builder = new TraceBuilder('sameSizePairs');
  for (let i = 0; i < pairs; i++) builder.free(builder.alloc(size, alignment));
  return builder.build(`same-size-${size}`, { generator: 'sameSizePairs', size, pairs, alignment });
}
