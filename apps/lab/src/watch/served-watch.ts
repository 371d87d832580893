/**
 * The server side of `allot-lab serve --watch DIR`: the folder followed as `watch` follows it,
 * and what a page (or Prometheus) reads of it on the same loopback server:
 *
 * ```
 *  GET /watch/state    the job now, as JSON (the live page's data, ui/live-data.ts): a row per
 *                      rank (its figures, and a point per dump), the advice, the post-mortems,
 *                      the files skipped
 *  GET /watch/updates  Server-Sent Events: `state` at once, then per file that lands an `update`
 *                      for each of its updates (the objects `watch --json` prints) and a `state`;
 *                      a comment every 15 s keeps proxies from closing it
 *  GET /metrics        the Prometheus text format (metrics.ts)
 * ```
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LiveState } from '../ui/live-data';
import { METRICS_CONTENT_TYPE, metricsText } from './metrics';
import { Stop, watchFolder } from './watch-loop';
import { adviceLine, noticeLines, updateJson } from './watch-table';
import { type WatchDevice, WatchedJob, type WatchUpdate } from './watched-job';

/** How often an idle event stream gets a comment, in ms. */
const KEEP_ALIVE_MS = 15_000;

/** What `serve --watch` follows, and how. */
export interface ServeWatchOptions extends WatchDevice {
  /** The folder (absolute), checked. */
  readonly folder: string;
  /** Seconds between two looks at it. */
  readonly interval: number;
  /** Hears a failure that stopped the watch (a bug: a damaged file is skipped, not thrown). */
  readonly onError?: (error: unknown) => void;
}

/** A folder followed for the server. */
export interface ServedWatch {
  readonly job: WatchedJob;
  /** Answers `path` when it is one of the watch's; false otherwise. */
  answer(path: string, request: IncomingMessage, response: ServerResponse, head: boolean): boolean;
  close(): Promise<void>;
}

/**
 * The job now, as `/watch/state` gives it: the live page's data (ui/live-data.ts), with the advice
 * and each post-mortem also in the words `allot-lab watch` prints.
 */
export function watchState(job: WatchedJob, folder: string): LiveState {
  return {
    folder,
    ranks: job.rows(),
    advice: job.advice,
    adviceText: adviceLine(job.advice),
    ooms: [...job.ooms.values()].map((update) => ({
      rank: update.rank,
      file: update.file,
      step: update.step,
      oom: update.oom,
      lines: noticeLines(update),
    })),
    skipped: job.skipped,
  };
}

function event(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Starts following `options.folder` (see the module comment). */
export function serveWatch(options: ServeWatchOptions): ServedWatch {
  const job = new WatchedJob({ memory: options.memory, fraction: options.fraction });
  const clients = new Set<ServerResponse>();
  const stop = new Stop();
  const publish = (updates: readonly WatchUpdate[]) => {
    const text =
      updates.map((update) => event('update', updateJson(update))).join('') +
      event('state', watchState(job, options.folder));
    for (const client of clients) client.write(text);
  };
  const loop = watchFolder(options.folder, job, {
    interval: options.interval,
    once: false,
    stop,
    onUpdates: publish,
  });
  const done = loop.catch((error: unknown) => options.onError?.(error));
  const keepAlive = setInterval(() => {
    for (const client of clients) client.write(': keep-alive\n\n');
  }, KEEP_ALIVE_MS);
  keepAlive.unref();
  return {
    job,
    answer(path, request, response, head) {
      if (path === '/metrics') {
        response.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE });
        response.end(head ? undefined : metricsText(job));
        return true;
      }
      if (path === '/watch/state') {
        response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
        response.end(head ? undefined : JSON.stringify(watchState(job, options.folder)));
        return true;
      }
      if (path !== '/watch/updates') return false;
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        connection: 'keep-alive',
      });
      if (head) {
        response.end();
        return true;
      }
      response.write(event('state', watchState(job, options.folder)));
      clients.add(response);
      request.on('close', () => clients.delete(response));
      return true;
    },
    async close() {
      stop.stop();
      clearInterval(keepAlive);
      for (const client of clients) client.end();
      clients.clear();
      await done;
    },
  };
}
