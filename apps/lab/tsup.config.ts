import { libraryConfig } from '@allot/tooling/tsup';
import { defineConfig } from 'tsup';

const DOM = { lib: ['ES2024', 'DOM', 'DOM.Iterable'] };

// The CLI, the worker thread of a job (dist/job-worker.js, which the CLI finds beside itself), the
// strategy table the benchmarks share, the lab without Node.js for the web app (engine), the
// report's page data from a run's results (report) and its client modules (ui), each with its
// declarations; a job's snapshots written over time for `watch` to follow (watch-demo); and the
// report file's script and style: the client modules and uPlot in one IIFE (the global `labUi`),
// with one style sheet, in dist/client/.
export default [
  libraryConfig({
    entry: {
      cli: 'src/cli.ts',
      'job-worker': 'src/job/worker.ts',
      strategies: 'src/strategies.ts',
      engine: 'src/engine.ts',
      report: 'src/report/page.ts',
      ui: 'src/ui/index.ts',
      'watch-demo': 'src/watch/demo.ts',
    },
    format: ['esm'],
    clean: ['!client/**'],
    dts: {
      entry: {
        strategies: 'src/strategies.ts',
        engine: 'src/engine.ts',
        report: 'src/report/page.ts',
        ui: 'src/ui/index.ts',
      },
      compilerOptions: DOM,
    },
  }),
  defineConfig({
    entry: { 'report-client': 'src/ui/standalone.ts' },
    outDir: 'dist/client',
    format: ['iife'],
    globalName: 'labUi',
    platform: 'browser',
    target: 'es2020',
    minify: true,
    noExternal: [/./],
    outExtension: () => ({ js: '.js' }),
    clean: true,
  }),
];
