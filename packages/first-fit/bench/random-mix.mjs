// Random mix and same-size pairs for first fit and next fit (the loop is in @allot/blocks' bench).
// Run: pnpm --filter @allot/first-fit build && node packages/first-fit/bench/random-mix.mjs [first|next]
import { runFitBench } from '../../blocks/bench/fit-bench.mjs';
import { firstFit } from '../dist/index.js';

const mode = process.argv[2] ?? 'first';
runFitBench(`${mode} fit`, (capacity) =>
  firstFit({ capacity, base: 2 ** 40, nextFit: mode === 'next' }),
);
