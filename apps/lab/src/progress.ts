/**
 * Progress on stderr: a bar redrawn in place on a terminal, plain lines otherwise (logs, CI), nothing
 * when quiet. stdout stays free for the tables or `--json`.
 */

/** Reports progress of a run of `total` steps (null: a search whose length is not known). */
export interface ProgressReporter {
  update(done: number, total: number | null, label: string): void;
  /** Clears the bar (terminal) before the results are printed. */
  done(): void;
}

const BAR_WIDTH = 28;
/** Columns assumed when the terminal reports none (some report 0, or nothing at all). */
const DEFAULT_COLUMNS = 100;
/** Narrowest line drawn, whatever the terminal reports. */
const MIN_COLUMNS = 20;

/** A reporter writing to `stream` (process.stderr by default). */
export function progressReporter(
  options: { quiet?: boolean; stream?: NodeJS.WriteStream } = {},
): ProgressReporter {
  const stream = options.stream ?? process.stderr;
  if (options.quiet) return { update() {}, done() {} };
  const tty = stream.isTTY === true;
  const started = performance.now();
  let lastLabel = '';
  const width = () => {
    const columns = stream.columns;
    return (
      Math.max(MIN_COLUMNS, columns !== undefined && columns > 0 ? columns : DEFAULT_COLUMNS) - 1
    );
  };
  return {
    update(done, total, label) {
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      if (tty) {
        const count = total === null ? `${done} so far` : `${done}/${total}`;
        const filled =
          total === null ? 0 : total === 0 ? BAR_WIDTH : Math.round((done / total) * BAR_WIDTH);
        const bar = total === null ? '' : `${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)} `;
        const line = `${bar}${count} ${seconds}s ${label}`;
        stream.write(`\r${line.slice(0, width()).padEnd(width())}`);
      } else if (label !== lastLabel && (total === null || done < total)) {
        const count = total === null ? `${done}` : `${done + 1}/${total}`;
        stream.write(`[${count}] ${label} (${seconds}s)\n`);
      }
      lastLabel = label;
    },
    done() {
      if (tty) stream.write(`\r${' '.repeat(width())}\r`);
    },
  };
}
