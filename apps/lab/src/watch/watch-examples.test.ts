/**
 * The examples of watching a job of many machines, run through the built CLI as their schedulers
 * would run them: the SLURM login-node script until the job leaves the queue (`squeue` stood in
 * for), and the Kubernetes Deployment's command, whose /metrics `promtool check metrics` passes.
 * Skipped when the CLI is not built or ../shared/traces is absent.
 */
import { type ChildProcess, execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { findTracesDir } from '@allot/workloads/node';
import { describe, expect, it } from 'vitest';
import { ringJob } from './ring-dumps';
import { jobFolder, until } from './test-watch';

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, '..', '..', 'dist', 'cli.js');
const examples = join(here, '..', '..', 'examples');
const traces = findTracesDir();
const TRAIN = traces === null ? '' : join(traces, 'pytorch-h100', 'train-default.pickle.gz');
const ready = existsSync(cli) && traces !== null && existsSync(TRAIN);

/** A folder holding a one-rank job's two dumps. */
async function writtenJob(): Promise<string> {
  const job = await ringJob({ ranks: [{ recording: TRAIN }], steps: 8, every: 4 });
  const folder = jobFolder();
  for (const dump of job.dumps) await job.write(dump, folder);
  return folder;
}

function text(path: string, host: string) {
  return new Promise<string>((resolve, reject) => {
    get(`http://${host}${path}`, (response) => {
      let body = '';
      response.on('data', (part: Buffer) => {
        body += part.toString();
      });
      response.on('end', () => resolve(body));
    }).on('error', reject);
  });
}

describe.skipIf(!ready)('the examples of watching a job of many machines', () => {
  it('runs the SLURM login-node script until the job has left the queue', async () => {
    const folder = await writtenJob();
    // squeue answers with the job twice, then no more: the job ended.
    const bin = mkdtempSync(join(tmpdir(), 'allot-bin-'));
    const count = join(bin, 'count');
    writeFileSync(count, '0');
    writeFileSync(
      join(bin, 'squeue'),
      `#!/bin/sh\nn=$(cat ${count}); echo $((n + 1)) > ${count}\n[ "$n" -lt 2 ] && echo 42\nexit 0\n`,
    );
    chmodSync(join(bin, 'squeue'), 0o755);
    const { stdout, stderr } = await promisify(execFile)(
      'bash',
      [join(examples, 'slurm', 'watch-job.sh'), '42', folder],
      {
        env: {
          ...process.env,
          PATH: `${bin}:${process.env.PATH}`,
          ALLOT_LAB: `${process.execPath} ${cli}`,
          INTERVAL: '1',
        },
      },
    );
    expect(stdout).toMatch(/^ rank {2}step {2}reserved/);
    expect(stdout).toMatch(/\n {4}0 {5}4 .* rank0_step4\.pickle\n/);
    expect(stdout).toMatch(/\n {4}0 {5}8 .* rank0_step8_exit\.pickle/);
    expect(stderr).toMatch(/read 2 files of 1 ranks\n$/);
    expect(Number(readFileSync(count, 'utf8'))).toBeGreaterThanOrEqual(3);
  }, 120_000);

  it("runs the Kubernetes Deployment's command: /metrics of the volume it follows", async () => {
    const folder = await writtenJob();
    const manifest = readFileSync(join(examples, 'kubernetes', 'watch-deployment.yaml'), 'utf8');
    const block = /args:\n\s*- \|\n((?:\s{14}.*\n)+)/.exec(manifest);
    expect(block).not.toBeNull();
    let output = '';
    const pod: ChildProcess = spawn('sh', ['-c', block![1]!.replace(/^ {14}/gm, '')], {
      env: {
        ...process.env,
        ALLOT_LAB: `${process.execPath} ${cli}`,
        SNAPSHOTS: folder,
        PORT: '0',
        INTERVAL: '0.1',
      },
    });
    pod.stdout!.on('data', (part: Buffer) => {
      output += part.toString();
    });

    try {
      await until(() => /http:\/\/127\.0\.0\.1:\d+/.test(output), 'the server to listen');
      const host = /http:\/\/(127\.0\.0\.1:\d+)/.exec(output)![1]!;
      let metrics = '';
      const poll = setInterval(async () => {
        metrics = await text('/metrics', host).catch(() => metrics);
      }, 100);
      try {
        await until(
          () => metrics.includes('allot_watch_step{rank="0",device="0"} 8'),
          'both dumps read',
          60,
        );
      } finally {
        clearInterval(poll);
      }
      if (spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0) {
        expect(execFileSync('promtool', ['check', 'metrics'], { input: metrics }).toString()).toBe(
          '',
        );
      } else {
        console.log(
          'promtool check metrics skipped: promtool is not on PATH (Debian package prometheus)',
        );
      }
    } finally {
      pod.kill('SIGINT');
    }
    const status = await new Promise<number | null>((resolve) => pod.on('exit', resolve));
    expect(status).toBe(0);
  }, 120_000);
});
