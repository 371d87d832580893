import { libraryConfig } from '@allot/tooling/tsup';

// The CLI, the worker thread of a job (dist/job-worker.js, which the CLI finds beside itself), and
// the strategy table the benchmarks share (with its declarations).
export default libraryConfig({
  entry: {
    cli: 'src/cli.ts',
    'job-worker': 'src/job/worker.ts',
    strategies: 'src/strategies.ts',
  },
  format: ['esm'],
  dts: { entry: { strategies: 'src/strategies.ts' } },
});
