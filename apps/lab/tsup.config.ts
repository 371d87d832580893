import { libraryConfig } from '@allot/tooling/tsup';

// The CLI, the worker thread of a job (dist/job-worker.js, which the CLI finds beside itself), the
// strategy table the benchmarks share, the lab without Node.js for the web app (engine), the
// report page from a run's results (report), each with its declarations; and a job's snapshots
// written over time for `watch` to follow (watch-demo).
export default libraryConfig({
  entry: {
    cli: 'src/cli.ts',
    'job-worker': 'src/job/worker.ts',
    strategies: 'src/strategies.ts',
    engine: 'src/engine.ts',
    report: 'src/report-page.ts',
    'watch-demo': 'src/watch/demo.ts',
  },
  format: ['esm'],
  dts: {
    entry: {
      strategies: 'src/strategies.ts',
      engine: 'src/engine.ts',
      report: 'src/report-page.ts',
    },
  },
});
