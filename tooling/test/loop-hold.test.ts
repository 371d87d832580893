import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMIT_MS, LoopHoldMeter, loopHoldSettings } from '../loop-hold.js';

describe('LoopHoldMeter', () => {
  /** A meter over clocks the test moves by hand. */
  function manual() {
    const clock = { cpu: 0, wall: 0 };
    const meter = new LoopHoldMeter(
      () => clock.cpu,
      () => clock.wall,
    );
    return { clock, meter };
  }

  it('takes the longest stretch between marks, by CPU time, and starts afresh', () => {
    const { clock, meter } = manual();
    clock.cpu += 5;
    clock.wall += 20;
    meter.mark();
    clock.cpu += 900; // held: 900 ms of CPU over 3 s of a busy machine's wall clock
    clock.wall += 3000;
    meter.mark();
    clock.cpu += 10;
    clock.wall += 5000; // idle: the wall clock runs, the CPU does not
    meter.mark();
    expect(meter.take()).toEqual({ cpuMs: 900, wallMs: 3000 });
    clock.cpu += 3;
    clock.wall += 20;
    expect(meter.take()).toEqual({ cpuMs: 3, wallMs: 20 });
  });

  it('counts the stretch still running when taken', () => {
    const { clock, meter } = manual();
    meter.mark();
    clock.cpu += 2500; // no mark since: the loop has not been free
    clock.wall += 2600;
    expect(meter.take()).toEqual({ cpuMs: 2500, wallMs: 2600 });
  });
});

describe('loopHoldSettings', () => {
  it('reads the limit and the log from the environment', () => {
    expect(loopHoldSettings({})).toEqual({ limitMs: DEFAULT_LIMIT_MS, log: undefined });
    expect(loopHoldSettings({ ALLOT_LOOP_HOLD_LIMIT_MS: '0' }).limitMs).toBe(0);
    expect(loopHoldSettings({ ALLOT_LOOP_HOLD_LIMIT_MS: '500', ALLOT_LOOP_HOLD_LOG: 'x' })).toEqual(
      { limitMs: 500, log: 'x' },
    );
    expect(() => loopHoldSettings({ ALLOT_LOOP_HOLD_LIMIT_MS: 'soon' })).toThrow(/ms/);
  });
});

describe('the guard in the vitest preset', () => {
  const fixtures = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
  const vitest = join(
    dirname(createRequire(import.meta.url).resolve('vitest/package.json')),
    'vitest.mjs',
  );

  interface Report {
    testResults: {
      name: string;
      message: string;
      assertionResults: { title: string; status: string; failureMessages: string[] }[];
    }[];
  }

  it('fails the tests that hold the loop too long, naming them, and passes the others', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'allot-loop-hold-')), 'report.json');
    const status = await promisify(execFile)(
      process.execPath,
      [vitest, 'run', '--config', 'vitest.config.js', '--reporter=json', `--outputFile=${out}`],
      { cwd: fixtures, env: { ...process.env, ALLOT_LOOP_HOLD_LIMIT_MS: '300' } },
    ).then(
      () => 0,
      (error: { code?: number; stderr?: string }) => {
        if (typeof error.code !== 'number') throw error;
        return error.code;
      },
    );
    expect(status).toBe(1);
    const report: Report = JSON.parse(readFileSync(out, 'utf8'));
    const file = (name: string) => report.testResults.find((f) => f.name.endsWith(name))!;

    const holds = file('holds.fixture.ts').assertionResults;
    expect(holds.map((t) => t.status)).toEqual(['failed', 'failed']);
    expect(holds[0]!.failureMessages[0]).toMatch(
      /"holds\.fixture\.ts > holds the loop in one stretch" held its worker's event loop for 0\.\d s of CPU time \(\d+\.\d s on the wall clock\) in one stretch; the limit is 0\.3 s \(ALLOT_LOOP_HOLD_LIMIT_MS\)/,
    );
    expect(holds[1]!.failureMessages[0]).toMatch(/holds it after an await too" held/);

    expect(file('lets-go.fixture.ts').assertionResults[0]!.status).toBe('passed');

    const loads = file('loads-slowly.fixture.ts');
    expect(loads.message).toMatch(/loads-slowly\.fixture\.ts, outside its tests, held its worker/);
  });
});
