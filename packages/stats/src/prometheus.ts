/**
 * Prometheus metrics for an allocator wrapped by `withStats`, through `prom-client` (an optional
 * peer dependency, loaded on first use). Every value is read when the registry is scraped, so the
 * allocation path pays nothing for metrics.
 *
 * Names (prefix `allot_` by default) follow Prometheus conventions: gauges in `_bytes` or as a
 * `_ratio`, counters ending in `_total`, and the request-size histogram in `_bytes` with
 * power-of-two buckets (`le` = 1, 2, 4, ... bytes).
 */
import { externalFragmentation } from './fragmentation';
import {
  asPromClient,
  type CounterLike,
  type GaugeLike,
  loadPromClient,
  type RegistryLike,
} from './prom-client-loader';
import type { StatsAllocator } from './with-stats';

export interface MetricsOptions {
  /** Prefix of every metric name. @defaultValue 'allot_' */
  readonly prefix?: string;
  /** Labels added to every series (to tell several allocators apart in one registry). */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * The `prom-client` module (`import * as promClient from 'prom-client'`), when it should not be
   * imported by name (typed loosely so any 15.x copy fits).
   */
  readonly promClient?: object;
  /** Largest histogram bucket bound, as a power of two exponent. @defaultValue 40 (1 TiB) */
  readonly maxSizeExponent?: number;
}

/** What `registerMetrics` registered. */
export interface MetricsHandle {
  /** Names of the registered metrics. */
  readonly names: readonly string[];
  /** Removes the metrics from the registry. */
  unregister(): void;
}

/** Metric names without the prefix, with their help text. */
export const METRIC_HELP = {
  allocated_bytes: 'Usable bytes of live allocations.',
  allocated_peak_bytes: 'Highest allocated_bytes since the last peak reset.',
  requested_bytes: 'Bytes requested by live allocations.',
  reserved_bytes: 'Bytes the allocator manages (for a pool: reserved from its source).',
  free_bytes: 'Bytes in free blocks.',
  largest_free_block_bytes: 'Size of the largest free block.',
  fragmentation_ratio: 'External fragmentation: 1 - largest free block / free bytes.',
  live_allocations: 'Live allocations.',
  allocations_total: 'Successful allocations.',
  frees_total: 'Frees of blocks allocated through the statistics adaptor.',
  allocation_failures_total: 'Allocations that failed (out of memory).',
  request_size_bytes: 'Sizes of successful allocation requests.',
} as const;

/**
 * Registers gauges, counters and a histogram for `stats` in `registry` (a prom-client `Registry`).
 * @throws UnsupportedError when `prom-client` is needed and not installed.
 */
export async function registerMetrics(
  stats: StatsAllocator,
  registry: RegistryLike,
  options: MetricsOptions = {},
): Promise<MetricsHandle> {
  const prom = options.promClient ? asPromClient(options.promClient) : await loadPromClient();
  const prefix = options.prefix ?? 'allot_';
  const labels = options.labels ?? {};
  const labelNames = Object.keys(labels);
  const maxExponent = options.maxSizeExponent ?? 40;
  const names: string[] = [];
  const registers = [registry];

  const gauge = (key: keyof typeof METRIC_HELP, read: () => number): void => {
    const name = prefix + key;
    names.push(name);
    new prom.Gauge({
      name,
      help: METRIC_HELP[key],
      labelNames,
      registers,
      collect(this: GaugeLike) {
        this.set(labels, read());
      },
    });
  };
  const counter = (key: keyof typeof METRIC_HELP, read: () => number): void => {
    const name = prefix + key;
    names.push(name);
    new prom.Counter({
      name,
      help: METRIC_HELP[key],
      labelNames,
      registers,
      collect(this: CounterLike) {
        this.reset();
        this.inc(labels, read());
      },
    });
  };

  gauge('allocated_bytes', () => stats.totals().allocatedBytes.current);
  gauge('allocated_peak_bytes', () => stats.totals().allocatedBytes.peak);
  gauge('requested_bytes', () => stats.totals().requestedBytes.current);
  gauge('reserved_bytes', () => {
    const pool = stats.poolSource?.poolStats().pools.all?.reserved_bytes;
    return pool?.current ?? stats.usage().capacity;
  });
  gauge('free_bytes', () => stats.usage().freeBytes);
  gauge('largest_free_block_bytes', () => stats.usage().largestFreeBlock);
  gauge('fragmentation_ratio', () => {
    const figures = stats.fragmentation();
    if (figures) return figures.externalFragmentation;
    const usage = stats.usage();
    return externalFragmentation(usage.largestFreeBlock, usage.freeBytes);
  });
  gauge('live_allocations', () => stats.totals().allocations.current);
  // Cumulative counts: kept by the adaptor since the last resetAccumulated().
  counter('allocations_total', () => stats.totals().allocations.allocated);
  counter('frees_total', () => stats.totals().allocations.freed);
  counter('allocation_failures_total', () => stats.totals().failures.allocated);

  const histogramName = `${prefix}request_size_bytes`;
  names.push(histogramName);
  const bounds: number[] = [];
  for (let k = 0; k <= maxExponent; k++) bounds.push(2 ** k);
  // The adaptor already counts sizes in power-of-two buckets; the histogram reports those counts
  // at scrape time instead of observing every allocation.
  // prom-client's registry reads `getForPromString` when a metric has it, `get` otherwise.
  class RequestSizeHistogram extends prom.Histogram {
    override async get() {
      return this.getForPromString();
    }

    async getForPromString() {
      const histogram = stats.sizeHistogram();
      const values: {
        labels: Record<string, string | number>;
        value: number;
        metricName: string;
      }[] = [];
      let cumulative = 0;
      let b = 0;
      for (const bound of bounds) {
        while (b < histogram.buckets.length && histogram.buckets[b]!.upper <= bound) {
          cumulative += histogram.buckets[b]!.count;
          b++;
        }
        values.push({
          labels: { ...labels, le: bound },
          value: cumulative,
          metricName: `${histogramName}_bucket`,
        });
      }
      values.push({
        labels: { ...labels, le: '+Inf' },
        value: histogram.count,
        metricName: `${histogramName}_bucket`,
      });
      values.push({
        labels: { ...labels },
        value: histogram.bytes,
        metricName: `${histogramName}_sum`,
      });
      values.push({
        labels: { ...labels },
        value: histogram.count,
        metricName: `${histogramName}_count`,
      });
      return {
        name: histogramName,
        help: METRIC_HELP.request_size_bytes,
        type: 'histogram',
        values,
        aggregator: 'sum',
      };
    }
  }
  new RequestSizeHistogram({
    name: histogramName,
    help: METRIC_HELP.request_size_bytes,
    labelNames,
    registers,
    buckets: bounds,
  });

  return {
    names,
    unregister() {
      for (const name of names) registry.removeSingleMetric(name);
    },
  };
}
