/**
 * `allot-lab serve --watch DIR`, the server side: the updates a page follows without reloading
 * (Server-Sent Events), the job's state as JSON, and `/metrics`, which `promtool check metrics`
 * passes (when Debian's `prometheus` package is installed; else that check says it was skipped).
 * The job is a generated one of two ranks from ../shared/traces (skipped, saying so, without it).
 * The state is the live page's data (ui/live-data.ts): a point per dump with its update's figures.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { get, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findTracesDir } from '@allot/workloads/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServedApp, serveApp } from '../serve';
import { liveState } from '../ui/live-check';
import type { LiveState } from '../ui/live-data';
import { ringJob } from './ring-dumps';
import { jobFolder, until } from './test-watch';
import { adviceLine } from './watch-table';

const traces = findTracesDir();
const TRAIN = traces === null ? null : join(traces, 'pytorch-h100', 'train-default.pickle.gz');

/** GET `path` of `served`; the whole answer. */
function fetchText(served: ServedApp, path: string, host?: string) {
  const { port } = served.server.address() as AddressInfo;
  return new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
    get(
      { host: '127.0.0.1', port, path, headers: { host: host ?? `127.0.0.1:${port}` } },
      (response) => {
        let body = '';
        response.on('data', (part: Buffer) => {
          body += part.toString();
        });
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            type: String(response.headers['content-type']),
            body,
          }),
        );
      },
    ).on('error', reject);
  });
}

/** The events of an open event stream, as they come. */
function follow(served: ServedApp) {
  const { port } = served.server.address() as AddressInfo;
  const events: { event: string; data: Record<string, unknown> }[] = [];
  let pending = '';
  let answer: IncomingMessage | undefined;
  get({ host: '127.0.0.1', port, path: '/watch/updates' }, (response) => {
    answer = response;
    response.on('data', (part: Buffer) => {
      pending += part.toString();
      let end = pending.indexOf('\n\n');
      while (end >= 0) {
        const block = pending.slice(0, end);
        pending = pending.slice(end + 2);
        const name = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (name !== undefined && data !== undefined)
          events.push({ event: name, data: JSON.parse(data) });
        end = pending.indexOf('\n\n');
      }
    });
  });
  return { events, type: () => String(answer?.headers['content-type']) };
}

function hasPromtool(): boolean {
  return spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;
}

if (TRAIN === null) {
  describe.skip('serve --watch (../shared/traces is absent)', () => {
    it('skipped', () => {});
  });
} else {
  describe('serve --watch: updates, state and /metrics of a job written while it serves', () => {
    let served: ServedApp;
    const folder = jobFolder();
    beforeAll(async () => {
      const app = mkdtempSync(join(tmpdir(), 'allot-app-'));
      mkdirSync(app, { recursive: true });
      writeFileSync(join(app, 'index.html'), '<!doctype html><title>the app</title>');
      served = await serveApp({
        files: [],
        app,
        watch: { folder, interval: 0.05, memory: null, fraction: null },
      });
    });
    afterAll(() => served?.close());

    it('streams an update per file as it lands, and serves the state and Prometheus gauges on 127.0.0.1 only', async () => {
      expect((served.server.address() as AddressInfo).address).toBe('127.0.0.1');
      const stream = follow(served);
      await until(() => stream.events.length > 0, 'the first state');
      expect(stream.type()).toBe('text/event-stream; charset=utf-8');
      expect(stream.events[0]).toMatchObject({ event: 'state', data: { ranks: [], advice: null } });
      const job = await ringJob({
        ranks: [{ recording: TRAIN }, { recording: TRAIN }],
        steps: 8,
        every: 4,
      });
      for (const dump of job.dumps) {
        await job.write(dump, folder);
        await until(
          () => stream.events.some((e) => e.event === 'update' && e.data.file === dump.path),
          `the update of ${dump.path}`,
        );
      }
      const updates = stream.events.filter((e) => e.event === 'update').map((e) => e.data);
      expect(updates.map((u) => [u.rank, u.step])).toEqual([
        [0, 4],
        [1, 4],
        [0, 8],
        [1, 8],
      ]);
      const last = stream.events.at(-1)!;
      expect(last.event).toBe('state');
      const live = last.data as unknown as LiveState;
      expect(live.ranks).toHaveLength(2);
      // The page's data: a point per dump, each with the figures its update gave, and the advice
      // in the words watch prints.
      for (const rank of live.ranks) {
        const own = updates.filter((u) => u.rank === rank.rank);
        expect(rank.trend.map((point) => point.file)).toEqual(own.map((u) => u.file));
        expect(rank.trend.map((point) => [point.reservedBytes, point.allocatedBytes])).toEqual(
          own.map((u) => [u.reservedBytes, u.allocatedBytes]),
        );
        expect(rank.trend.map((point) => point.advisedPeakReservedBytes)).toEqual(
          own.map((u) => (u.advice as { peakReservedBytes: number }).peakReservedBytes),
        );
      }
      expect(live.adviceText).toBe(adviceLine(live.advice));
      expect(live.adviceText).toMatch(/^advice so far: /);

      const state = await fetchText(served, '/watch/state');
      expect(state.type).toBe('application/json; charset=utf-8');
      expect(JSON.parse(state.body)).toEqual(last.data);
      expect(() => liveState(JSON.parse(state.body))).not.toThrow();

      const metrics = await fetchText(served, '/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.type).toBe('text/plain; version=0.0.4; charset=utf-8');
      for (const rank of [0, 1]) {
        const final = updates.filter((u) => u.rank === rank).at(-1)!;
        expect(metrics.body).toContain(
          `allot_reserved_bytes_all_current{rank="${rank}",device="0"} ${final.reservedBytes}\n`,
        );
        expect(metrics.body).toContain(
          `allot_inactive_split_bytes_all_current{rank="${rank}",device="0"} ${final.inactiveSplitBytes}\n`,
        );
        expect(metrics.body).toContain(
          `allot_replayed_peak_reserved_bytes{rank="${rank}",device="0"} ${final.peakReservedBytes}\n`,
        );
      }
      const advice = (updates.at(-1)!.advice as { allocConf: string }).allocConf;
      expect(metrics.body).toContain(`allot_advice_info{alloc_conf="${advice}"} 1\n`);
      if (hasPromtool()) {
        expect(
          execFileSync('promtool', ['check', 'metrics'], { input: metrics.body }).toString(),
        ).toBe('');
      } else {
        console.log(
          'promtool check metrics skipped: promtool is not on PATH (Debian package prometheus)',
        );
      }
      expect((await fetchText(served, '/metrics', 'attacker.example')).status).toBe(403);
    }, 300_000);
  });
}
