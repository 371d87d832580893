import { request } from 'node:http';
import { unpickle } from '@allot/pickle';
import { describe, expect, it } from 'vitest';
import { tinyFirstFit } from '../test/support/tiny-first-fit';
import { serveMetrics } from './serve-metrics';
import { withStats } from './with-stats';

function get(url: string, method = 'GET'): Promise<{ status: number; type: string; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          type: String(res.headers['content-type']),
          body: Buffer.concat(chunks),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('serveMetrics', () => {
  it('serves /metrics, /snapshot and friends on loopback', async () => {
    const stats = withStats(tinyFirstFit({ capacity: 4096 }), { trace: true });
    stats.allocate(100);
    const server = await serveMetrics(stats, { port: 0 });
    try {
      expect(server.host).toBe('127.0.0.1');
      expect(server.port).toBeGreaterThan(0);
      expect(server.url).toBe(`http://127.0.0.1:${server.port}`);

      const metrics = await get(`${server.url}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.type).toContain('text/plain');
      expect(metrics.body.toString()).toMatch(/^allot_allocated_bytes 104$/m);

      const snapshot = await get(`${server.url}/snapshot`);
      expect(snapshot.status).toBe(200);
      const json = JSON.parse(snapshot.body.toString());
      expect(json.segments[0].blocks[0]).toMatchObject({ size: 104, state: 'active_allocated' });
      expect(json.device_traces[0][0].action).toBe('alloc');

      const pickle = await get(`${server.url}/snapshot.pickle`);
      expect(pickle.type).toBe('application/octet-stream');
      expect(
        (unpickle(new Uint8Array(pickle.body)) as { segments: unknown[] }).segments,
      ).toHaveLength(1);

      const stats2 = JSON.parse((await get(`${server.url}/memory_stats`)).body.toString());
      expect(stats2['allocated_bytes.all.current']).toBe(104);
      expect((await get(`${server.url}/summary`)).body.toString()).toContain('Allocated memory');
      expect((await get(`${server.url}/nope`)).status).toBe(404);
      expect((await get(`${server.url}/metrics`, 'POST')).status).toBe(405);
    } finally {
      await server.close();
    }
    await expect(get(`${server.url}/metrics`)).rejects.toThrow();
  });
});
