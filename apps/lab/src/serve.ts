/**
 * `allot-lab serve [FILE...]`: the lab's web app on a loopback HTTP server. The files named on the
 * command line are served under `/files/I/NAME` and named in the URL the command prints, so the
 * page opens them: they are read and replayed in the browser, in the page's worker, as a file
 * dropped on the page is. Nothing is sent anywhere; the server listens on 127.0.0.1 unless `--host`
 * says otherwise, and answers only requests addressed to it by that name (or `localhost`), so a
 * web page elsewhere cannot read the files through a name of its own that points here.
 *
 * The app is the web app's build: `dist/web` beside the CLI in the published package (copied there
 * when the package is packed), else `apps/web/dist` in the repository. With `--watch DIR` it also
 * follows a running job's folder (watch/served-watch.ts: `/watch/updates`, `/watch/state`,
 * `/metrics`), and serves those even where the app is not built; the URL it prints then opens
 * the app's live page of that job (`?watch`).
 */
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { reportFailure } from './failure';
import { UsageError } from './options';
import { type ServedWatch, type ServeWatchOptions, serveWatch } from './watch/served-watch';
import { watchedFolder } from './watch/watch-loop';

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/**
 * What the page may load and connect to: itself, and the worker it starts from a blob. The page's
 * own `<meta>` says the same; the header holds for every response. `'unsafe-eval'`: the lab compiles
 * a replay loop per row (`new Function`).
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self' 'unsafe-eval' blob:; worker-src blob:; " +
  "style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'";

/** The built web app: in the repository, else beside the CLI in the package; null when absent. */
export function appFolder(): string | null {
  for (const url of [
    new URL('../../web/dist/', import.meta.url),
    new URL('./web/', import.meta.url),
  ]) {
    const folder = fileURLToPath(url);
    if (existsSync(join(folder, 'index.html'))) return folder;
  }
  return null;
}

/** Options of {@link serveApp}. */
export interface ServeOptions {
  /** Files to open in the page, as given (relative to `cwd`). */
  readonly files: readonly string[];
  /** @defaultValue '127.0.0.1' */
  readonly host?: string;
  /** 0 for a free port. @defaultValue 0 */
  readonly port?: number;
  /** The folder of the built app. @defaultValue {@link appFolder} */
  readonly app?: string;
  /** @defaultValue process.cwd() */
  readonly cwd?: string;
  /**
   * A folder to follow as `allot-lab watch` does (`--watch DIR`, relative to `cwd`), for
   * `/watch/state`, `/watch/updates` and `/metrics` (watch/served-watch.ts).
   */
  readonly watch?: Omit<ServeWatchOptions, 'folder'> & { readonly folder: string };
}

/** A running server of the app. */
export interface ServedApp {
  /** The page, with the files named in it. */
  readonly url: string;
  readonly server: Server;
  /** The folder followed, with `watch`. */
  readonly watched?: ServedWatch;
  close(): Promise<void>;
}

/** The files, checked: each must be a readable file. @throws UsageError */
function servedFiles(files: readonly string[], cwd: string): string[] {
  return files.map((file) => {
    const path = resolve(cwd, file);
    if (!existsSync(path)) throw new UsageError(`cannot read ${file}: no such file`);
    if (!statSync(path).isFile()) throw new UsageError(`cannot serve ${file}: not a file`);
    return path;
  });
}

/** `host:port` as a URL writes it (an IPv6 address in brackets). */
function authority(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function send(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  response.end(text);
}

function stream(response: ServerResponse, path: string, type: string, head: boolean): void {
  response.writeHead(200, { 'content-type': type, 'content-length': statSync(path).size });
  if (head) {
    response.end();
    return;
  }
  const body = createReadStream(path);
  body.on('error', () => response.destroy());
  body.pipe(response);
}

/** Serves the app and the files (see the module comment); resolves once it listens. */
export async function serveApp(options: ServeOptions): Promise<ServedApp> {
  const app = options.app ?? appFolder();
  // Without the app, a server that follows a folder still serves its updates and its gauges.
  if (app === null && options.watch === undefined) {
    throw new UsageError(
      'the web app is not built: run `pnpm build` in the repository (it builds apps/web)',
    );
  }
  const files = servedFiles(options.files, options.cwd ?? process.cwd());
  const watchOptions = options.watch;
  const folder =
    watchOptions === undefined
      ? null
      : watchedFolder(watchOptions.folder, options.cwd ?? process.cwd());
  const host = options.host ?? '127.0.0.1';
  // Listening on every address (--host 0.0.0.0) is asking to be reached by any name.
  const everywhere = host === '0.0.0.0' || host === '::';
  const names = new Set<string>();
  let port = 0;
  let watched: ServedWatch | undefined;
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    response.setHeader('cache-control', 'no-store');
    response.setHeader('x-content-type-options', 'nosniff');
    response.setHeader('referrer-policy', 'no-referrer');
    response.setHeader('cross-origin-resource-policy', 'same-origin');
    response.setHeader('content-security-policy', CONTENT_SECURITY_POLICY);
    if (!everywhere && !names.has(request.headers.host ?? ''))
      return send(response, 403, 'unknown host name');
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return send(response, 405, 'only GET and HEAD');
    const head = request.method === 'HEAD';
    let path: string;
    try {
      path = decodeURIComponent(new URL(request.url ?? '/', 'http://host').pathname);
    } catch {
      return send(response, 400, 'bad path');
    }
    try {
      if (watched?.answer(path, request, response, head) === true) return;
    } catch (error) {
      // A bug answering: said on the one request, the server goes on.
      return send(response, 500, `internal error, a bug in allot-lab: ${(error as Error).message}`);
    }
    const file = /^\/files\/(\d+)\/([^/]+)$/.exec(path);
    if (file) {
      const served = files[Number(file[1])];
      if (served === undefined || basename(served) !== file[2])
        return send(response, 404, 'no such file');
      return stream(response, served, 'application/octet-stream', head);
    }
    if (app === null) return send(response, 404, 'not found: the web app is not built');
    const target = resolve(app, `.${path === '/' ? '/index.html' : path}`);
    if (!target.startsWith(resolve(app) + sep) || !existsSync(target) || !statSync(target).isFile())
      return send(response, 404, 'not found');
    stream(response, target, TYPES[extname(target)] ?? 'application/octet-stream', head);
  };
  const server = createServer(handle);
  await new Promise<void>((done, fail) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      fail(
        error.code === 'EADDRINUSE' || error.code === 'EACCES' || error.code === 'EADDRNOTAVAIL'
          ? new UsageError(`cannot listen on ${authority(host, options.port ?? 0)}: ${error.code}`)
          : error,
      ),
    );
    server.listen(options.port ?? 0, host, () => done());
  });
  port = (server.address() as AddressInfo).port;
  watched = folder === null ? undefined : serveWatch({ ...watchOptions!, folder });
  for (const name of [host, 'localhost', '127.0.0.1', '::1']) names.add(authority(name, port));
  // `watch`: the page shows the job the server follows (the web app's live page).
  const query = [
    ...(watched !== undefined ? ['watch'] : []),
    ...files.map((path, i) => `file=${encodeURIComponent(`files/${i}/${basename(path)}`)}`),
  ].join('&');
  return {
    url: `http://${authority(everywhere ? '127.0.0.1' : host, port)}/${query === '' ? '' : `?${query}`}`,
    server,
    ...(watched !== undefined ? { watched } : {}),
    close: async () => {
      await watched?.close();
      await new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      });
    },
  };
}

/** `allot-lab serve`: serves until interrupted, then returns 0. */
export async function serveCommand(
  options: {
    readonly files: readonly string[];
    readonly host: string;
    readonly port: number;
    readonly watch: string | null;
    readonly interval: number;
    readonly memory: number | null;
    readonly fraction: number | null;
  },
  io: {
    readonly stdout: NodeJS.WritableStream;
    readonly stderr: NodeJS.WritableStream;
    readonly cwd?: string;
    readonly signal?: AbortSignal;
  },
): Promise<number> {
  let failed: unknown = null;
  let finish = () => {};
  const finished = new Promise<void>((done) => {
    finish = done;
  });
  const served = await serveApp({
    files: options.files,
    host: options.host,
    port: options.port,
    ...(io.cwd !== undefined ? { cwd: io.cwd } : {}),
    ...(options.watch !== null
      ? {
          watch: {
            folder: options.watch,
            interval: options.interval,
            memory: options.memory,
            fraction: options.fraction,
            onError: (error) => {
              failed = error;
              finish();
            },
          },
        }
      : {}),
  });
  const opened =
    options.files.length === 0
      ? 'drop snapshots on the page'
      : `the page opens ${options.files.length === 1 ? 'the file' : `the ${options.files.length} files`}`;
  const shown =
    options.watch === null
      ? `${opened}; they are read and replayed in the browser, nothing is uploaded`
      : `the page shows the job in ${options.watch} as its snapshots land: this server reads them, nothing is uploaded`;
  const origin = served.url.replace(/\/\?.*$|\/$/, '');
  const watching =
    options.watch === null
      ? ''
      : `  following ${options.watch} (polled every ${options.interval} s): ${origin}/watch/updates (Server-Sent Events), ` +
        `${origin}/watch/state (JSON), ${origin}/metrics (Prometheus)\n`;
  io.stdout.write(
    `allot-lab: the lab in the browser at ${served.url}\n` +
      `  ${shown}. Ctrl-C stops.\n` +
      watching,
  );
  process.on('SIGINT', finish);
  process.on('SIGTERM', finish);
  io.signal?.addEventListener('abort', finish);
  if (io.signal?.aborted === true) finish();
  await finished;
  process.off('SIGINT', finish);
  process.off('SIGTERM', finish);
  io.signal?.removeEventListener('abort', finish);
  await served.close();
  return failed === null ? 0 : reportFailure(failed, io.stderr, false);
}
