import { describe, expect, it } from 'vitest';
import { helpText } from '../help';
import { HELP } from '../help-text';
import { parseArguments, UsageError } from '../options';
import { RECORD_ENV, recordEnvironment } from './settings';

function usageError(argv: string[]): string {
  try {
    parseArguments(argv);
  } catch (error) {
    if (error instanceof UsageError) return error.message;
    throw error;
  }
  throw new Error(`no error for ${argv.join(' ')}`);
}

describe("record's arguments", () => {
  it('takes everything after the first -- as the command, untouched', () => {
    const argv = ['record', '--every-steps', '50', '--out', 'snaps', '--', 'torchrun'];
    const command = ['--nproc_per_node=2', 'train.py', '--out', 'x', '--', '--lr', '3', '-h'];
    const options = parseArguments([...argv, ...command]);
    expect(options.command).toBe('record');
    expect(options.record).toEqual({
      out: 'snaps',
      maxEntries: 100_000,
      everySteps: 50,
      everySeconds: null,
      stacks: 'python',
      command: ['torchrun', ...command],
    });
  });

  it('records every 300 s unless a schedule is given; 0 turns one off', () => {
    const plain = parseArguments(['record', '--', 'python', 't.py']).record!;
    expect([plain.out, plain.everySteps, plain.everySeconds]).toEqual([
      'memory-snapshots',
      null,
      300,
    ]);
    const off = parseArguments(['record', '--every-seconds', '0', '--', 'python']).record!;
    expect([off.everySteps, off.everySeconds]).toEqual([null, null]);
    const both = parseArguments([
      'record',
      '--every-steps=10',
      '--every-seconds',
      '2.5',
      '--max-entries',
      '5000',
      '--stacks',
      'none',
      '--',
      'python',
    ]).record!;
    expect([both.everySteps, both.everySeconds, both.maxEntries, both.stacks]).toEqual([
      10,
      2.5,
      5000,
      'none',
    ]);
  });

  it('refuses a missing command, a command before --, and values it cannot use', () => {
    expect(usageError(['record'])).toMatch(/record needs the command to run after --/);
    expect(usageError(['record', '--'])).toMatch(/record needs the command to run after --/);
    expect(usageError(['record', 'python', 'train.py', '--lr', '3'])).toMatch(
      /record needs the command to run after --: allot-lab record \[options\] -- python train\.py/,
    );
    expect(usageError(['record', 'python', '--', 'train.py'])).toMatch(
      /record runs the command after --, not 'python'/,
    );
    expect(usageError(['record', '--stacks', 'cpp', '--', 'python'])).toMatch(
      /--stacks expects python, all, none, got 'cpp'/,
    );
    expect(usageError(['record', '--every-steps', '-1', '--', 'python'])).toMatch(/--every-steps/);
    expect(usageError(['record', '--every-seconds', 'soon', '--', 'python'])).toMatch(
      /--every-seconds expects a number of seconds/,
    );
    expect(usageError(['record', '--max-entries', '0', '--', 'python'])).toMatch(
      /--max-entries expects a whole number of at least 1, got '0'/,
    );
    expect(usageError(['replay', 'x.pickle', '--every-steps', '5'])).toBe(
      '--every-steps is an option of record',
    );
    expect(usageError(['record', '--jobs', '2', '--', 'python'])).toMatch(
      /--jobs is an option of replay and tune/,
    );
  });

  it('leaves -- to other commands as the end of their options', () => {
    expect(parseArguments(['replay', '--', '-odd-name.pickle']).files).toEqual([
      '-odd-name.pickle',
    ]);
  });

  it('has its help, cut from the whole help', () => {
    expect(parseArguments(['record', '--help']).helpFor).toBe('record');
    const text = helpText('record');
    expect(text).toMatch(/^allot-lab record: run a PyTorch job's command unchanged/);
    for (const option of [
      '--out',
      '--every-steps',
      '--every-seconds',
      '--max-entries',
      '--stacks',
    ]) {
      expect(text).toMatch(new RegExp(`\\n {2}${option} `));
    }
    expect(HELP).toMatch(/record exits as its command did/);
  });
});

describe("the recorder's environment", () => {
  it('puts the recorder first on PYTHONPATH and hands it the settings', () => {
    const options = parseArguments(['record', '--every-steps', '4', '--', 'python']).record!;
    const paths = { out: '/job/out', status: '/tmp/s', bootstrap: '/lab/python/bootstrap' };
    const env = recordEnvironment(options, paths, { PYTHONPATH: '/mine', HOME: '/home/u' });
    expect(env).toMatchObject({
      PYTHONPATH: '/lab/python/bootstrap:/mine',
      HOME: '/home/u',
      [RECORD_ENV.dir]: '/job/out',
      [RECORD_ENV.status]: '/tmp/s',
      [RECORD_ENV.maxEntries]: '100000',
      [RECORD_ENV.everySteps]: '4',
      [RECORD_ENV.everySeconds]: '0',
      [RECORD_ENV.stacks]: 'python',
    });
    expect(recordEnvironment(options, paths, { PYTHONPATH: '' }).PYTHONPATH).toBe(
      '/lab/python/bootstrap',
    );
  });
});
