// What record-torchrun.sh's run shows, checked: it writes OUT/check.json and prints each check on a
// line. Exits 0 when every check held, 1 otherwise.
//
//   node apps/lab/bench/record-torchrun-check.mjs OUT STARTED ENDED STATUS ROWS_DURING_RUN
//
// STARTED and ENDED are the job's start and end (seconds since the epoch), STATUS its exit status
// under `allot-lab record`, ROWS_DURING_RUN the lines `watch --json` had printed when it ended.

import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatTorchSize as torchSize } from '../dist/engine.js';

const [out, startedText, endedText, statusText, rowsText] = process.argv.slice(2);
if (rowsText === undefined) {
  process.stderr.write(
    'usage: record-torchrun-check.mjs OUT STARTED ENDED STATUS ROWS_DURING_RUN\n',
  );
  process.exit(2);
}
const started = Number(startedText);
const ended = Number(endedText);
const dir = join(out, 'snapshots');
const read = (name) => (existsSync(join(out, name)) ? readFileSync(join(out, name), 'utf8') : '');
const jsonLines = (text) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));

const checks = [];
const check = (name, ok, detail) => checks.push({ name, ok: Boolean(ok), ...detail });

// The files, by rank, and when each appeared.
const seen = read('seen.log')
  .split('\n')
  .filter(Boolean)
  .map((line) => {
    const [time, name] = line.split(' ');
    return { time: Number(time), name };
  });
const snapshots = existsSync(dir) ? readdirSync(dir).filter((n) => n.endsWith('.pickle')) : [];
const rankOf = (name) => Number(/^rank(\d+)_/.exec(name)?.[1] ?? Number.NaN);
const ranks = [...new Set(snapshots.map(rankOf))].sort((a, b) => a - b);
const duringRun = Object.fromEntries(
  ranks.map((rank) => [
    rank,
    seen
      .filter((s) => s.name.endsWith('.pickle') && rankOf(s.name) === rank && s.time < ended)
      .map((s) => ({ file: s.name, afterStartSeconds: +(s.time - started).toFixed(2) })),
  ]),
);
check('two ranks recorded', ranks.length === 2, { ranks, snapshots: snapshots.sort() });
check(
  'both ranks wrote files during the run',
  ranks.length === 2 && ranks.every((rank) => duringRun[rank].length > 0),
  { jobSeconds: +(ended - started).toFixed(2), duringRun },
);
check('watch printed rows during the run', Number(rowsText) > 0, {
  rowsDuringRun: Number(rowsText),
});
check('the job failed, as a job whose rank runs out of memory does', Number(statusText) !== 0, {
  status: Number(statusText),
});

// The out-of-memory error: PyTorch's message, the recorder's dump, watch's post-mortem.
const job = read('job.log');
const message = /Tried to allocate (\d+(?:\.\d+)? (?:bytes|KiB|MiB|GiB))/.exec(job)?.[1] ?? null;
const oomFile = snapshots.find((n) => n.endsWith('_oom.pickle')) ?? null;
const sidecar =
  oomFile && existsSync(join(dir, oomFile.replace(/\.pickle$/, '.json')))
    ? JSON.parse(readFileSync(join(dir, oomFile.replace(/\.pickle$/, '.json')), 'utf8'))
    : null;
const watched = jsonLines(read('watch.jsonl'));
const oomRow = watched.find((row) => row.oom !== undefined) ?? null;
const named = oomRow?.oom?.recorded?.allocationBytes ?? null;
const text = read('watch.txt');
const textSize =
  /"Tried to allocate (\d+(?:\.\d+)? (?:bytes|KiB|MiB|GiB))"/.exec(text)?.[1] ?? null;
check('PyTorch named a request size', message !== null, { message });
check('an out-of-memory dump landed', oomFile !== null && sidecar?.oom != null, {
  oomFile,
  observer: sidecar?.oom ?? null,
});
check(
  "the observer's size is the one PyTorch's message names",
  sidecar?.oom != null && torchSize(sidecar.oom.allocationBytes) === message,
  { observer: sidecar?.oom ? torchSize(sidecar.oom.allocationBytes) : null, message },
);
check(
  "watch's post-mortem names PyTorch's request size, in JSON and in the terminal",
  named !== null && torchSize(named) === message && textSize === message,
  {
    request: oomRow?.oom?.recorded?.sizeBytes ?? null,
    allocationBytes: named,
    asPyTorchWritesIt: named !== null ? torchSize(named) : null,
    terminal: textSize,
    message,
  },
);
check('the terminal printed the post-mortem', /ran out of memory/.test(text), {});
check(
  "the post-mortem's wall is the cap PyTorch's observer was told, and the replay fails there too",
  oomRow?.oom?.capacityBytes === sidecar?.oom?.limitBytes &&
    oomRow?.oom?.reproduced?.event === oomRow?.oom?.recorded?.event,
  {
    wall: oomRow?.oom?.capacityBytes ?? null,
    wallSource: oomRow?.oom?.capacitySource ?? null,
    observerLimit: sidecar?.oom?.limitBytes ?? null,
    reproduced: oomRow?.oom?.reproduced ?? null,
  },
);

// Peaks: watch's last row of each rank, replay of the folder, and PyTorch's memory_stats().
const replay = read('replay.json') ? JSON.parse(read('replay.json')) : null;
const peaks = ranks.map((rank) => {
  const rows = watched.filter((row) => row.rank === rank && row.peakReservedBytes !== undefined);
  const last = rows.at(-1) ?? null;
  const replayed = replay?.ranks?.find((r) => r.rank === rank) ?? null;
  const sidecarOf = last
    ? join(dir, last.file.replace(/\.pickle$/, '.json'))
    : join(dir, 'missing.json');
  const stats = existsSync(sidecarOf) ? JSON.parse(readFileSync(sidecarOf, 'utf8')) : null;
  return {
    rank,
    file: last?.file ?? null,
    watch: last?.peakReservedBytes ?? null,
    replay: replayed?.replayed?.peakReservedBytes ?? null,
    replayFile: replayed?.trace ?? null,
    pytorchPeakReserved: stats?.peakReservedBytes ?? null,
  };
});
check(
  "watch's final peaks equal replay's",
  peaks.length === 2 && peaks.every((p) => p.watch !== null && p.watch === p.replay),
  { peaks },
);

const verdict = { ok: checks.every((c) => c.ok), checks };
writeFileSync(join(out, 'check.json'), `${JSON.stringify(verdict, null, 2)}\n`);
for (const c of checks) process.stdout.write(`${c.ok ? 'held  ' : 'FAILED'}  ${c.name}\n`);
process.stdout.write(`${JSON.stringify(verdict)}\n`);
process.exit(verdict.ok ? 0 : 1);
