/**
 * `node dist/index-replay.js <fit row>`: what a fit strategy's free index costs alone on random-5k.
 * The row runs the workload's fill and its 10^6 operations once while every call the engine makes
 * into its free index (insert, remove, update, find) is recorded with the block's address and size;
 * then the calls are replayed, two times untimed and seven timed, on a fresh index of the same class
 * over a bare table of addresses and sizes, and the median CPU time is printed per operation of the
 * workload. The rest of
 * the engine (the address table, the block table, splitting and merging) is the row's figure less
 * this one.
 *
 * It reaches into the allocator's internals (its index, table and top block) on purpose: they are
 * what it measures.
 */
import { BlockState, FitAllocator, NIL } from '@allot/blocks';
import { findStrategy } from '@allot/lab/strategies';
import { median } from './measure';
import { fillHandles, Handles, runOperations } from './raw-loop';
import { planRandom, type RawWorkload, rawWorkloads } from './raw-plan';

/** What the replay needs of an index and its table. */
interface IndexLike {
  insert(block: number): void;
  remove(block: number): void;
  update(block: number): void;
  find(size: number, alignment: number, top: number): number;
}
interface Internals {
  readonly index: IndexLike;
  readonly top: number;
}
type IndexClass = new (
  table: { address: Float64Array; size: Float64Array },
  granule: number,
) => IndexLike;

const INSERT = 0;
const REMOVE = 1;
const UPDATE = 2;
const FIND = 3;
/** Replays, the first {@link WARMUP_RUNS} untimed (the compiler's warm-up). */
const RUNS = 9;
const WARMUP_RUNS = 2;
const GRANULE = 8;

function main(): void {
  const name = process.argv[2] ?? '';
  const strategy = findStrategy(name);
  const workload = rawWorkloads()[1] as Extract<RawWorkload, { kind: 'random' }>;
  const allocator = strategy?.build(workload.arenaBytes);
  if (!(allocator instanceof FitAllocator)) {
    throw new Error(
      'usage: node dist/index-replay.js <first-fit|best-fit|good-fit|worst-fit|next-fit>',
    );
  }
  const { index, top } = allocator as unknown as Internals;
  const table = allocator.table;
  const plan = planRandom(workload, 1);
  const handles = new Handles(plan.maxLive);
  fillHandles(allocator, plan.fill, handles);
  // The blocks filed when recording starts (every free block but the top), by slot.
  const filed: number[] = [];
  for (let b = table.head; b !== NIL; b = table.next[b]!) {
    if (table.state[b] === BlockState.Free && b !== top) filed.push(b);
  }
  const startAddress = table.address.slice();
  const startSize = table.size.slice();
  const log: number[] = [];
  const record = (kind: number, block: number) =>
    log.push(kind, block, table.address[block]!, table.size[block]!);
  const calls = {
    insert: index.insert.bind(index),
    remove: index.remove.bind(index),
    update: index.update.bind(index),
    find: index.find.bind(index),
  };
  index.insert = (b) => {
    record(INSERT, b);
    calls.insert(b);
  };
  index.remove = (b) => {
    log.push(REMOVE, b, 0, 0);
    calls.remove(b);
  };
  index.update = (b) => {
    record(UPDATE, b);
    calls.update(b);
  };
  index.find = (size, alignment, top) => {
    log.push(FIND, 0, 0, size);
    return calls.find(size, alignment, top);
  };
  runOperations(allocator, plan.operations, handles);
  const Index = index.constructor as IndexClass;
  const slots = Math.max(table.address.length, startAddress.length);
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const bare = { address: new Float64Array(slots), size: new Float64Array(slots) };
    const fresh = new Index(bare, GRANULE);
    for (const b of filed) {
      bare.address[b] = startAddress[b]!;
      bare.size[b] = startSize[b]!;
      fresh.insert(b);
    }
    const start = process.cpuUsage();
    for (let i = 0; i < log.length; i += 4) {
      const kind = log[i]!;
      const block = log[i + 1]!;
      if (kind === FIND) {
        fresh.find(log[i + 3]!, 1, -1);
        continue;
      }
      if (kind !== REMOVE) {
        bare.address[block] = log[i + 2]!;
        bare.size[block] = log[i + 3]!;
      }
      if (kind === INSERT) fresh.insert(block);
      else if (kind === REMOVE) fresh.remove(block);
      else fresh.update(block);
    }
    const { user, system } = process.cpuUsage(start);
    if (run >= WARMUP_RUNS) times.push(((user + system) * 1000) / plan.operations.length);
  }
  process.stdout.write(
    `${name}: ${(log.length / 4 / plan.operations.length).toFixed(2)} index calls per operation; ` +
      `the index alone ${median(times).toFixed(1)} ns per operation (runs ${times.map((t) => t.toFixed(1)).join(', ')})\n`,
  );
}

main();
