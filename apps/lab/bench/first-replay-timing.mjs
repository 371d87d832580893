// How warm the lab's ns/event is on the first rows a process measures: `allot-lab replay FILE FILE`
// replays one recording twice in one process, so the second workload's rows are timed once every
// row's code has run; the first workload's should read the same. Prints, per row, the median over
// RUNS processes of each workload's ns/event and their ratio (first / second).
//
//   node apps/lab/bench/first-replay-timing.mjs FILE [RUNS] [--device cuda:0]
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [file, runsArg, ...rest] = process.argv.slice(2);
if (!file) {
  console.error('usage: node apps/lab/bench/first-replay-timing.mjs FILE [RUNS] [--device D]');
  process.exit(2);
}
const runs = Number(runsArg ?? 5);
const cli = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'allot-lab.js');
const args = ['replay', file, file, '--json', '--no-report', '--quiet'];
args.push('--allocators', process.env.ROWS ?? 'first-fit,best-fit,caching', ...rest);

const figures = new Map();
for (let run = 0; run < runs; run++) {
  const out = execFileSync(process.execPath, [cli, ...args], { maxBuffer: 1 << 28 }).toString();
  const [first, second] = JSON.parse(out).workloads;
  for (const [i, row] of first.rows.entries()) {
    const entry = figures.get(row.allocator) ?? { first: [], second: [] };
    entry.first.push(row.nsPerEvent);
    entry.second.push(second.rows[i].nsPerEvent);
    figures.set(row.allocator, entry);
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
console.log(`${runs} processes, Node ${process.version}`);
for (const [allocator, { first, second }] of figures) {
  const [a, b] = [median(first), median(second)];
  console.log(
    `${allocator.padEnd(18)} first ${a.toFixed(0).padStart(6)} ns/event (${first.map((v) => v.toFixed(0)).join(', ')})` +
      `  second ${b.toFixed(0).padStart(5)}  ratio ${(a / b).toFixed(2)}`,
  );
}
