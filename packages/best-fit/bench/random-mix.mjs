// Random mix and same-size pairs for best, good and worst fit (the loop is in @allot/blocks' bench).
// Run: pnpm --filter @allot/best-fit build && node packages/best-fit/bench/random-mix.mjs [best|good|worst]
import { runFitBench } from '../../blocks/bench/fit-bench.mjs';
import { bestFit } from '../dist/index.js';

const mode = process.argv[2] ?? 'best';
runFitBench(`${mode} fit`, (capacity) => bestFit({ capacity, base: 2 ** 40, mode }));
