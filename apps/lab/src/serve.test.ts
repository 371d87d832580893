/**
 * `allot-lab serve`: the app and the named files on 127.0.0.1 only, nothing outside the app's
 * folder, nothing for a host name other than the server's own, and the options it takes.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseArguments, UsageError } from './options';
import { CONTENT_SECURITY_POLICY, type ServedApp, serveApp } from './serve';

const dir = mkdtempSync(join(tmpdir(), 'allot-serve-'));
const app = join(dir, 'app');
mkdirSync(app);
writeFileSync(join(app, 'index.html'), '<!doctype html><title>the app</title>');
writeFileSync(join(app, 'app.js'), 'console.log(1);');
writeFileSync(join(dir, 'secret.txt'), 'not for the page');
writeFileSync(join(dir, 'run 1.pickle'), new Uint8Array([0x80, 4, 0x95, 1, 2, 3]));

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

/** GET `path` from the server, with `host` as the Host header (default: the server's own). */
function fetchRaw(served: ServedApp, path: string, host?: string): Promise<Answer> {
  const { port } = served.server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const request = get(
      { host: '127.0.0.1', port, path, headers: { host: host ?? `127.0.0.1:${port}` } },
      (response) => {
        const parts: Buffer[] = [];
        response.on('data', (part: Buffer) => parts.push(part));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(parts),
          }),
        );
      },
    );
    request.on('error', reject);
  });
}

describe('serveApp', () => {
  let served: ServedApp;
  beforeAll(async () => {
    served = await serveApp({ files: ['run 1.pickle'], app, cwd: dir });
  });
  afterAll(() => served?.close());

  it('listens on 127.0.0.1 at a free port and names the files in the URL', () => {
    const address = served.server.address() as AddressInfo;
    expect(address.address).toBe('127.0.0.1');
    expect(address.port).toBeGreaterThan(0);
    expect(served.url).toBe(`http://127.0.0.1:${address.port}/?file=files%2F0%2Frun%201.pickle`);
  });

  it('serves the app and the named file, with a policy that keeps the page to itself', async () => {
    const page = await fetchRaw(served, '/');
    expect(page.status).toBe(200);
    expect(page.body.toString()).toContain('the app');
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect((await fetchRaw(served, '/app.js')).headers['content-type']).toMatch(/javascript/);
    const file = await fetchRaw(served, '/files/0/run%201.pickle');
    expect(file.status).toBe(200);
    expect([...file.body]).toEqual([0x80, 4, 0x95, 1, 2, 3]);
    expect(file.headers['content-length']).toBe('6');
  });

  it('serves nothing else: other files, paths out of the folder, other host names', async () => {
    for (const path of [
      '/files/1/run%201.pickle',
      '/files/0/secret.txt',
      '/../secret.txt',
      '/%2e%2e/secret.txt',
      '/..%2fsecret.txt',
      '/missing.js',
    ]) {
      expect((await fetchRaw(served, path)).status, path).toBe(404);
    }
    const { port } = served.server.address() as AddressInfo;
    expect((await fetchRaw(served, '/', `localhost:${port}`)).status).toBe(200);
    expect((await fetchRaw(served, '/', `attacker.example:${port}`)).status).toBe(403);
  });

  it('refuses a missing file before it listens', async () => {
    await expect(serveApp({ files: ['nope.pickle'], app, cwd: dir })).rejects.toThrow(UsageError);
    await expect(serveApp({ files: ['app'], app, cwd: dir })).rejects.toThrow(/not a file/);
  });
});

describe('serve options', () => {
  it('reads --port and --host, defaults to a free port on 127.0.0.1', () => {
    expect(parseArguments(['serve'])).toMatchObject({
      command: 'serve',
      host: '127.0.0.1',
      port: 0,
    });
    expect(parseArguments(['serve', 'a.pickle', '--port', '8080', '--host', '::1'])).toMatchObject({
      files: ['a.pickle'],
      host: '::1',
      port: 8080,
    });
    expect(() => parseArguments(['serve', '--port', '70000'])).toThrow(/0 to 65535/);
    expect(() => parseArguments(['replay', 'a', '--port', '1'])).toThrow(/option of serve/);
    expect(() => parseArguments(['serve', '--host', 'a b'])).toThrow(/--host/);
  });
});
