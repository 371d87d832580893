/**
 * serveMetrics: a small HTTP server (node:http) so a running service can be watched from Prometheus
 * and Grafana and its memory fetched for memory_viz. Bound to 127.0.0.1 unless told otherwise: the
 * snapshot shows addresses and stack traces, which should not leave the machine by accident.
 *
 * Routes (GET only):
 * - `/metrics`: Prometheus text (needs `prom-client`);
 * - `/snapshot`: the PyTorch snapshot as JSON; `/snapshot.pickle`: the same as a pickle file;
 * - `/memory_stats`: `memoryStats()` as JSON; `/summary`: `memorySummary()` as text.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { memoryStats } from './memory-stats';
import { memorySummary } from './memory-summary';
import { asPromClient, loadPromClient, type RegistryLike } from './prom-client-loader';
import { type MetricsOptions, registerMetrics } from './prometheus';
import { toTorchSnapshotJson, toTorchSnapshotPickle } from './snapshot-export';
import type { StatsAllocator } from './with-stats';

export interface ServeMetricsOptions extends MetricsOptions {
  /** TCP port; 0 picks a free one (read it back from `port`). */
  readonly port: number;
  /** Interface to bind. @defaultValue '127.0.0.1' */
  readonly host?: string;
  /** Registry to register the metrics in and serve. @defaultValue a new prom-client `Registry` */
  readonly registry?: RegistryLike;
}

/**
 * The HTTP server behind {@link MetricsServer}: a `node:http` `Server`, typed by what callers use so
 * that these declarations do not need `@types/node`.
 */
export interface MetricsHttpServer {
  address(): unknown;
  close(callback?: (error?: Error) => void): unknown;
}

/** A running metrics server. */
export interface MetricsServer {
  /** `http://host:port`. */
  readonly url: string;
  readonly host: string;
  /** Port actually bound. */
  readonly port: number;
  readonly server: MetricsHttpServer;
  readonly registry: RegistryLike;
  /** Stops listening, closes idle connections and removes the metrics from the registry. */
  close(): Promise<void>;
}

/**
 * Starts the server and resolves once it listens.
 * @throws UnsupportedError when `prom-client` is needed and not installed.
 */
export async function serveMetrics(
  stats: StatsAllocator,
  options: ServeMetricsOptions,
): Promise<MetricsServer> {
  const host = options.host ?? '127.0.0.1';
  const prom = options.promClient ? asPromClient(options.promClient) : await loadPromClient();
  const registry = options.registry ?? new prom.Registry();
  const handle = await registerMetrics(stats, registry, { ...options, promClient: prom });

  const send = (
    response: ServerResponse,
    status: number,
    type: string,
    body: string | Uint8Array,
  ) => {
    response.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
    response.end(body);
  };

  const handler = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.setHeader('allow', 'GET, HEAD');
      send(response, 405, 'text/plain; charset=utf-8', 'Method not allowed\n');
      return;
    }
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    switch (path) {
      case '/metrics':
        send(response, 200, registry.contentType, await registry.metrics());
        return;
      case '/snapshot':
        send(response, 200, 'application/json', toTorchSnapshotJson(stats));
        return;
      case '/snapshot.pickle':
        response.setHeader('content-disposition', 'attachment; filename="snapshot.pickle"');
        send(response, 200, 'application/octet-stream', toTorchSnapshotPickle(stats));
        return;
      case '/memory_stats':
        send(response, 200, 'application/json', JSON.stringify(memoryStats(stats)));
        return;
      case '/summary':
        send(response, 200, 'text/plain; charset=utf-8', `${memorySummary(stats)}\n`);
        return;
      default:
        send(
          response,
          404,
          'text/plain; charset=utf-8',
          'Not found. Try /metrics, /snapshot, /snapshot.pickle, /memory_stats or /summary.\n',
        );
    }
  };

  const server = createServer((request, response) => {
    handler(request, response).catch((error: unknown) => {
      if (!response.headersSent) {
        send(response, 500, 'text/plain; charset=utf-8', `${String(error)}\n`);
      } else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    host,
    port,
    server,
    registry,
    close: () =>
      new Promise<void>((resolve, reject) => {
        handle.unregister();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
