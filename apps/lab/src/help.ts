/**
 * What the lab says about itself besides its results: one command's help, cut from the whole help
 * (`HELP` in options.ts) so that both say each option the same way, and `list --json`.
 *
 * ```
 *  HELP ─► Usage entries (a line per command, continued by deeper-indented lines)
 *       ─► Options entries (a line per option, continued likewise)
 *  replay --help ─► its usage entries, the entries of the options it takes, a pointer to --help
 * ```
 */

import { ALL_ROWS, ROWS } from './analysis/registry';
import { HELP } from './help-text';
import type { Command } from './options';
import { builtInWorkloads } from './workloads';

/** The options each command takes, in the order of the whole help. */
const COMMAND_OPTIONS: Readonly<Partial<Record<Command, readonly string[]>>> = {
  run: [
    '--allocators',
    '--workloads',
    '--capacity',
    '--out',
    '--export',
    '--no-report',
    '--json',
    '--seed',
    '--quick',
    '--quiet',
    '--debug',
  ],
  replay: [
    '--allocators',
    '--capacity',
    '--config',
    '--memory',
    '--fraction',
    '--format',
    '--out',
    '--export',
    '--no-report',
    '--json',
    '--quiet',
    '--max-input',
    '--device',
    '--jobs',
    '--step',
    '--shard',
    '--debug',
  ],
  tune: [
    '--memory',
    '--fraction',
    '--format',
    '--out',
    '--no-report',
    '--json',
    '--seed',
    '--quick',
    '--quiet',
    '--max-input',
    '--device',
    '--jobs',
    '--step',
    '--shard',
    '--force',
    '--debug',
  ],
  capacity: [
    '--allocators',
    '--format',
    '--json',
    '--seed',
    '--quick',
    '--quiet',
    '--max-input',
    '--device',
    '--debug',
  ],
  oom: [
    '--memory',
    '--fraction',
    '--format',
    '--json',
    '--quiet',
    '--max-input',
    '--device',
    '--debug',
  ],
  merge: ['--out', '--no-report', '--json', '--force', '--debug'],
  record: ['--out', '--every-steps', '--every-seconds', '--max-entries', '--stacks', '--debug'],
  watch: ['--memory', '--fraction', '--json', '--quiet', '--once', '--interval', '--debug'],
  list: ['--json'],
};

/** Commands that read trace files: their help lists the formats too. */
const READS_FILES: readonly Command[] = ['replay', 'tune', 'capacity', 'oom'];

/** The lines of the section of the whole help whose title begins with `title`, the title included. */
function section(title: string): string[] {
  const lines = HELP.split('\n');
  const start = lines.findIndex((line) => line.startsWith(title));
  const end = lines.indexOf('', start);
  return lines.slice(start, end < 0 ? undefined : end);
}

/** The entries of a section of the whole help: each a line and the deeper-indented lines after it. */
function entries(title: string): string[][] {
  const out: string[][] = [];
  for (const line of section(title).slice(1)) {
    if (/^ {2}\S/.test(line) || out.length === 0) out.push([line]);
    else out[out.length - 1]!.push(line);
  }
  return out;
}

/** The command of a usage entry (`allot-lab replay|tune DIR` names two; none is the built-in run). */
function commandsOf(entry: readonly string[]): string[] {
  const word = entry[0]!.trim().split(/\s+/)[1] ?? '';
  return word.startsWith('[') ? ['run'] : word.split('|');
}

/** The help of `command`: the whole help when it has no text of its own. */
export function helpText(command: Command | undefined): string {
  const wanted = command === undefined ? undefined : COMMAND_OPTIONS[command];
  if (command === undefined || wanted === undefined) return HELP;
  const usage = entries('Usage').filter((entry) => commandsOf(entry).includes(command));
  const options = entries('Options').filter((entry) =>
    wanted.some((option) => new RegExp(`^ {2}(-\\w, )?${option}\\b`).test(entry[0]!)),
  );
  // The first entry's words after its syntax (two spaces or more apart), with its continuation.
  const [first = '', ...rest] = usage[0] ?? [];
  const summary = [first.trim().split(/\s{2,}/)[1] ?? '', ...rest.map((line) => line.trim())].join(
    ' ',
  );
  const name = command === 'run' ? 'allot-lab' : `allot-lab ${command}`;
  const formats = READS_FILES.includes(command) ? ['', ...section('Trace formats')] : [];
  return [
    `${name}: ${summary}`,
    '',
    'Usage',
    ...usage.flat(),
    '',
    'Options',
    ...options.flat(),
    ...formats,
    '',
    'allot-lab --help: every command and option, the trace formats, the exit statuses and the limits',
    '',
  ].join('\n');
}

/** `list --json`: every allocator row (whether a run shows it by default) and the workloads. */
export function listJson(): string {
  return `${JSON.stringify(
    {
      allocators: ALL_ROWS.map((row) => ({
        name: row.name,
        kind: row.kind,
        recipe: row.recipe,
        default: ROWS.includes(row),
      })),
      workloads: builtInWorkloads(1, false).map((workload) => ({
        id: workload.id,
        title: workload.title,
        description: workload.description,
      })),
    },
    null,
    2,
  )}\n`;
}
