import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { tinyFirstFit } from '../test/support/tiny-first-fit';
import { registerMetrics } from './prometheus';
import { withStats } from './with-stats';

/** `name{labels} value` lines of a scrape, as a map. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

describe('registerMetrics', () => {
  it('exposes gauges, counters and a request-size histogram', async () => {
    const stats = withStats(tinyFirstFit({ capacity: 4096, granule: 1 }));
    const registry = new Registry();
    const handle = await registerMetrics(stats, registry);
    const blocks = [100, 200, 1000, 8].map((n) => stats.allocate(n)!);
    stats.free(blocks[1]!);
    stats.allocate(10_000); // fails
    const text = await registry.metrics();
    expect(text).toContain('# TYPE allot_allocated_bytes gauge');
    expect(text).toContain('# TYPE allot_allocations_total counter');
    expect(text).toContain('# TYPE allot_request_size_bytes histogram');
    const s = samples(text);
    expect(s.get('allot_allocated_bytes')).toBe(1108);
    expect(s.get('allot_allocated_peak_bytes')).toBe(1308);
    expect(s.get('allot_requested_bytes')).toBe(1108);
    expect(s.get('allot_reserved_bytes')).toBe(4096);
    const usage = stats.usage();
    expect(s.get('allot_free_bytes')).toBe(usage.freeBytes);
    expect(s.get('allot_largest_free_block_bytes')).toBe(usage.largestFreeBlock);
    expect(usage.freeBlockCount).toBe(2);
    expect(s.get('allot_fragmentation_ratio')).toBeCloseTo(
      1 - usage.largestFreeBlock / usage.freeBytes,
    );
    expect(s.get('allot_live_allocations')).toBe(3);
    expect(s.get('allot_allocations_total')).toBe(4);
    expect(s.get('allot_frees_total')).toBe(1);
    expect(s.get('allot_allocation_failures_total')).toBe(1);
    expect(s.get('allot_request_size_bytes_bucket{le="8"}')).toBe(1);
    expect(s.get('allot_request_size_bytes_bucket{le="128"}')).toBe(2);
    expect(s.get('allot_request_size_bytes_bucket{le="256"}')).toBe(3);
    expect(s.get('allot_request_size_bytes_bucket{le="1024"}')).toBe(4);
    expect(s.get('allot_request_size_bytes_bucket{le="+Inf"}')).toBe(4);
    expect(s.get('allot_request_size_bytes_sum')).toBe(1308);
    expect(s.get('allot_request_size_bytes_count')).toBe(4);
    // Every metric name follows the conventions.
    for (const name of handle.names)
      expect(name).toMatch(/^allot_\w+(_bytes|_total|_ratio|_allocations)$/);
    handle.unregister();
    expect(await registry.metrics()).toBe('\n');
  });

  it('adds constant labels and a custom prefix, so allocators can share a registry', async () => {
    const registry = new Registry();
    const a = withStats(tinyFirstFit({ capacity: 1024 }));
    a.allocate(64);
    await registerMetrics(a, registry, { prefix: 'gpu_', labels: { allocator: 'a' } });
    const text = await registry.metrics();
    const s = samples(text);
    expect(s.get('gpu_allocated_bytes{allocator="a"}'), text).toBe(64);
    expect(s.get('gpu_request_size_bytes_bucket{allocator="a",le="64"}'), text).toBe(1);
  });

  it('accepts the prom-client module as an option', async () => {
    const prom = await import('prom-client');
    const registry = new prom.Registry();
    const stats = withStats(tinyFirstFit({ capacity: 1024 }));
    await registerMetrics(stats, registry, { promClient: prom });
    expect(await registry.metrics()).toContain('allot_live_allocations 0');
  });
});
