import { describe, expect, it } from 'vitest';
import { ROW_NAMES } from './analysis/registry';
import { HELP } from './help-text';
import { lab } from './lab';
import { EXIT_OK } from './options';
import { Capture } from './test-capture';
import { WORKLOAD_IDS } from './workloads';

async function run(argv: string[]) {
  const stdout = new Capture();
  const stderr = new Capture();
  const status = await lab(argv, { stdout, stderr });
  return { status, stdout: stdout.text, stderr: stderr.text };
}

/** The options a help text lists (the first flag of each entry). */
function optionsOf(text: string): string[] {
  return [...text.matchAll(/^ {2}(--[a-z-]+)/gm)].map((match) => match[1]!);
}

describe('a command’s help', () => {
  it('is the command’s usage and its own options, whether asked with --help, -h or help COMMAND', async () => {
    for (const argv of [
      ['replay', '--help'],
      ['replay', 'x.pickle', '-h'],
      ['help', 'replay'],
    ]) {
      const { status, stdout } = await run(argv);
      expect(status).toBe(EXIT_OK);
      expect(stdout).toMatch(/^allot-lab replay: /);
      expect(stdout).toMatch(/\n {2}allot-lab replay FILE\.\.\. \[options\]/);
      expect(optionsOf(stdout)).toContain('--config');
      expect(optionsOf(stdout)).not.toContain('--workloads');
      expect(stdout).not.toBe(HELP);
    }
    const tune = (await run(['tune', '--help'])).stdout;
    expect(tune).toMatch(/^allot-lab tune: /);
    expect(optionsOf(tune)).toEqual(expect.arrayContaining(['--memory', '--fraction', '--force']));
    expect(optionsOf(tune)).not.toContain('--config');
    expect(optionsOf((await run(['list', '--help'])).stdout)).toEqual(['--json']);
    const watch = (await run(['watch', '--help'])).stdout;
    expect(watch).toMatch(
      /^allot-lab watch: follow the folder a running job writes its snapshots to/,
    );
    expect(optionsOf(watch)).toEqual(expect.arrayContaining(['--once', '--interval', '--json']));
  });

  it('is the whole help without a command', async () => {
    expect((await run(['--help'])).stdout).toBe(HELP);
    expect((await run(['help'])).stdout).toBe(HELP);
  });

  it('says every option of the whole help the same way', async () => {
    const whole = HELP.split('\n');
    for (const command of ['replay', 'tune', 'capacity', 'oom', 'merge', 'watch', 'list']) {
      const text = (await run([command, '--help'])).stdout;
      for (const line of text.split('\n').filter((l) => /^ {2}--/.test(l))) {
        expect(whole, `${command}: ${line}`).toContain(line);
      }
    }
  });
});

describe('list --json', () => {
  it('prints the allocators and workloads as JSON', async () => {
    const { status, stdout } = await run(['list', '--json']);
    expect(status).toBe(EXIT_OK);
    const list = JSON.parse(stdout) as {
      allocators: { name: string; kind: string; recipe: string; default: boolean }[];
      workloads: { id: string; title: string; description: string }[];
    };
    expect(list.allocators.filter((row) => row.default).map((row) => row.name)).toEqual(ROW_NAMES);
    expect(list.allocators.find((row) => row.name === 'caching-expandable')!.kind).toBe('pool');
    expect(list.workloads.map((workload) => workload.id)).toEqual([...WORKLOAD_IDS]);
  });
});
