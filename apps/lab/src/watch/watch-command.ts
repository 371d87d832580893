/**
 * `allot-lab watch DIR`: follows a folder while a job writes its snapshots into it, and keeps a
 * table of its ranks: what each holds, its peaks, and what the job's advice would make of them; a
 * rank's post-mortem the moment its out-of-memory dump lands. `--json` writes one JSON object per
 * update instead (JSON Lines); `--once` reads what the folder holds and exits.
 *
 * ```
 *  every --interval seconds: FolderPoll ─► complete files ─► WatchedJob.add ─► updates
 *     terminal: the table redrawn in place        a log (not a terminal): each rank's row as its
 *                                                 file lands, under one header
 *     --json: one object per update
 *  Ctrl-C (SIGINT), SIGTERM: the file being read is finished, the table printed once more, exit 0
 * ```
 */
import { EXIT_BAD_INPUT, EXIT_OK, type LabOptions } from '../options';
import { formatCount } from '../units';
import { Stop, watchedFolder, watchFolder } from './watch-loop';
import { adviceLine, headerLine, noticeLines, rowLine, updateJson } from './watch-table';
import { WatchedJob, type WatchUpdate } from './watched-job';

/** Where `watch` writes, and what stops it besides Ctrl-C (the tests abort it). */
export interface WatchIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly cwd?: string;
  readonly signal?: AbortSignal;
}

/** Ctrl-C (SIGINT), SIGTERM and `signal` stop `stop`, until disposed of. */
function stopOn(stop: Stop, signal: AbortSignal | undefined): () => void {
  const asked = () => stop.stop();
  if (signal?.aborted === true) stop.stop();
  process.on('SIGINT', asked);
  process.on('SIGTERM', asked);
  signal?.addEventListener('abort', asked);
  return () => {
    process.off('SIGINT', asked);
    process.off('SIGTERM', asked);
    signal?.removeEventListener('abort', asked);
  };
}

/** How updates are shown: JSON Lines, a log, or a table kept in place on a terminal. */
interface View {
  show(updates: readonly WatchUpdate[], job: WatchedJob): void;
  end(job: WatchedJob): void;
}

function jsonView(io: WatchIo): View {
  return {
    show: (updates) => {
      for (const update of updates) io.stdout.write(`${JSON.stringify(updateJson(update))}\n`);
    },
    end: () => {},
  };
}

function tableLines(job: WatchedJob): string[] {
  return [headerLine(), ...job.rows().map(rowLine), adviceLine(job.advice)];
}

function logView(io: WatchIo): View {
  let advised: string | null = null;
  return {
    show: (updates) => {
      for (const update of updates) {
        if (update.type === 'skipped') {
          io.stderr.write(`allot-lab: ${noticeLines(update)[0]}\n`);
          continue;
        }
        if (update.type === 'rank') io.stdout.write(`${rowLine(update.row)}\n`);
        const notices = noticeLines(update);
        if (notices.length > 0) io.stdout.write(`${notices.join('\n')}\n`);
        if (update.type === 'rank' && update.advice !== null && update.advice.config !== advised) {
          advised = update.advice.config;
          io.stdout.write(`${adviceLine(update.advice)}\n`);
        }
      }
    },
    end: (job) => io.stdout.write(`\n${tableLines(job).join('\n')}\n`),
  };
}

function terminalView(io: WatchIo): View {
  let drawn = 0;
  const draw = (job: WatchedJob, notices: readonly string[]) => {
    const table = tableLines(job);
    // Up over the table drawn last, clear it, print what happened, then the table again.
    const up = drawn > 0 ? `\x1b[${drawn}F\x1b[0J` : '';
    const above = notices.length > 0 ? `${notices.join('\n')}\n` : '';
    io.stdout.write(`${up}${above}${table.join('\n')}\n`);
    drawn = table.length;
  };
  return {
    show: (updates, job) => {
      const notices: string[] = [];
      for (const update of updates) {
        if (update.type === 'skipped') io.stderr.write(`allot-lab: ${noticeLines(update)[0]}\n`);
        else notices.push(...noticeLines(update));
      }
      draw(job, notices);
    },
    end: () => {},
  };
}

/** Runs `watch` (see the module comment); returns the exit status. */
export async function watchCommand(options: LabOptions, io: WatchIo): Promise<number> {
  const root = watchedFolder(options.files[0]!, io.cwd ?? process.cwd());
  const job = new WatchedJob({ memory: options.memory, fraction: options.fraction });
  const tty = (io.stdout as NodeJS.WriteStream).isTTY === true;
  const view = options.json ? jsonView(io) : tty ? terminalView(io) : logView(io);
  if (!options.quiet) {
    const how = options.once
      ? 'reading what it holds'
      : `polling every ${options.interval} s (a folder another machine writes to is not seen by fs.watch); Ctrl-C stops`;
    io.stderr.write(`allot-lab: watching ${root} for snapshots: ${how}\n`);
  }
  if (!options.json && !tty) io.stdout.write(`${headerLine()}\n`);
  const stop = new Stop();
  const dispose = stopOn(stop, io.signal);
  let files = 0;
  try {
    files = await watchFolder(root, job, {
      interval: options.interval,
      once: options.once,
      stop,
      onUpdates: (updates) => view.show(updates, job),
    });
  } finally {
    dispose();
  }
  view.end(job);
  if (!options.quiet) {
    io.stderr.write(
      `allot-lab: read ${formatCount(files)} files of ${formatCount(job.rows().length)} ranks` +
        `${job.skipped.length > 0 ? `, skipped ${formatCount(job.skipped.length)}` : ''}\n`,
    );
  }
  return options.once && job.skipped.length > 0 ? EXIT_BAD_INPUT : EXIT_OK;
}
