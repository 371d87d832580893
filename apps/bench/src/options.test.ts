import { describe, expect, it } from 'vitest';
import { parseCli, UsageError } from './options';
import { planWorkloads } from './workload-plan';

describe('parseCli', () => {
  it('reads the options', () => {
    const options = parseCli([
      '--quick',
      '--runs',
      '5',
      '--allocators',
      'best-fit, bump',
      '--no-write',
    ]);
    expect(options.settings.quick).toBe(true);
    expect(options.settings.runs).toBe(5);
    expect(options.allocators).toEqual(['best-fit', 'bump']);
    expect(options.write).toBe(false);
  });

  it('rejects unknown options and bad values', () => {
    expect(() => parseCli(['--fast'])).toThrow(UsageError);
    expect(() => parseCli(['--runs', '0'])).toThrow(/--runs expects an integer/);
    expect(() => parseCli(['--processes', '0'])).toThrow(/--processes expects an integer/);
    expect(() => parseCli(['--processes', '2.5'])).toThrow(/--processes expects an integer/);
  });

  it('runs three processes per row in a full run, one in a quick run', () => {
    expect(parseCli([]).settings.processes).toBe(3);
    expect(parseCli(['--quick']).settings.processes).toBe(1);
    expect(parseCli(['--processes', '5']).settings.processes).toBe(5);
  });
});

describe('planWorkloads', () => {
  it('lists the synthetic workloads and notes missing traces', () => {
    const plan = planWorkloads(true, null);
    expect(plan.workloads.map((w) => w.id)).toEqual([
      'pairs-64',
      'pairs-4k',
      'mix-5k',
      'mix-100k',
      'training',
    ]);
    expect(plan.notes[0]).toMatch(/Real-program traces skipped/);
  });
});
