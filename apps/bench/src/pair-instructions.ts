/**
 * `node dist/pair-instructions.js <row> <pairs>`: three untimed passes of 300,000 `free(allocate(64))`
 * pairs, then `<pairs>` more, and nothing else: a program to count instructions under valgrind's
 * callgrind, where the machine's load changes nothing. The difference between two counts (say 1.2
 * million and 0.2 million pairs) over the difference in pairs is the row's instructions per pair:
 *
 * ```sh
 * valgrind --tool=callgrind --callgrind-out-file=/dev/null \
 *   node --single-threaded --no-liftoff apps/bench/dist/pair-instructions.js good-fit 1200000
 * ```
 *
 * `--single-threaded` keeps V8's compilation on the main thread, so it happens in the untimed passes
 * of both counts alike instead of in a background thread at whatever moment.
 */
import { runPairs } from './raw-loop';
import { PAIRS_ARENA } from './raw-measure';
import { findAllocator } from './registry';

const WARMUP_PAIRS = 300_000;
const SIZE = 64;

async function main(): Promise<void> {
  const [name = '', count = ''] = process.argv.slice(2);
  const entry = findAllocator(name);
  const pairs = Number(count);
  if (!entry || !Number.isSafeInteger(pairs) || pairs < 0) {
    throw new Error('usage: node dist/pair-instructions.js <row> <pairs>');
  }
  const factory = await entry.load();
  const profile = {
    peakLiveBytes: SIZE,
    totalAllocatedBytes: SIZE * (3 * WARMUP_PAIRS + pairs),
    allocs: 3 * WARMUP_PAIRS + pairs,
    maxSize: SIZE,
  };
  const allocator = factory(entry.rawCapacity?.(profile) ?? PAIRS_ARENA, profile);
  for (let pass = 0; pass < 3; pass++) runPairs(allocator, SIZE, WARMUP_PAIRS);
  const failures = runPairs(allocator, SIZE, pairs);
  if (failures > 0) throw new Error(`${name}: ${failures} allocations failed`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
