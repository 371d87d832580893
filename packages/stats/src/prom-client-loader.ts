/**
 * Loads `prom-client`, an optional peer dependency, only when metrics are asked for, and describes
 * the small part of its API this package uses (so our type declarations do not depend on it).
 */
import { InvalidArgumentError, UnsupportedError } from '@allot/core';

/** A metric registered in a registry (prom-client's `Metric`). */
export interface MetricLike {
  readonly name: string;
  get(): Promise<unknown>;
}

/** The part of prom-client's `Registry` used here. */
export interface RegistryLike {
  registerMetric(metric: never): void;
  removeSingleMetric(name: string): void;
  metrics(): Promise<string>;
  readonly contentType: string;
}

/** Constructor options shared by prom-client's metric classes. */
export interface MetricConfiguration {
  readonly name: string;
  readonly help: string;
  readonly labelNames?: readonly string[];
  readonly registers?: readonly RegistryLike[];
  readonly buckets?: readonly number[];
  readonly collect?: () => void | Promise<void>;
}

export interface GaugeLike extends MetricLike {
  set(labels: Readonly<Record<string, string>>, value: number): void;
}

export interface CounterLike extends MetricLike {
  inc(labels: Readonly<Record<string, string>>, value: number): void;
  reset(): void;
}

/** The part of the `prom-client` module used here; pass the module itself. */
export interface PromClientLike {
  readonly Registry: new () => RegistryLike;
  readonly Gauge: new (configuration: MetricConfiguration) => GaugeLike;
  readonly Counter: new (configuration: MetricConfiguration) => CounterLike;
  readonly Histogram: new (configuration: MetricConfiguration) => MetricLike;
}

/**
 * `prom-client`, imported on first use.
 * @throws UnsupportedError naming the package when it is not installed.
 */
export async function loadPromClient(): Promise<PromClientLike> {
  const name = 'prom-client';
  try {
    const module = (await import(name)) as PromClientLike & { default?: PromClientLike };
    return asPromClient(module.Registry ? module : module.default!);
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) throw error;
    throw new UnsupportedError(
      "@allot/stats: Prometheus metrics need the optional peer dependency 'prom-client' " +
        '(install it with `npm install prom-client`), or pass the module as the `promClient` option.',
      { cause: error },
    );
  }
}

/**
 * `module` as the prom-client API, after checking it has the classes used here.
 * @throws InvalidArgumentError when it does not look like prom-client.
 */
export function asPromClient(module: object): PromClientLike {
  const m = module as Partial<Record<keyof PromClientLike, unknown>>;
  for (const name of ['Registry', 'Gauge', 'Counter', 'Histogram'] as const) {
    if (typeof m[name] !== 'function') {
      throw new InvalidArgumentError(
        'promClient',
        `module without ${name}`,
        "the 'prom-client' module",
      );
    }
  }
  return module as PromClientLike;
}
