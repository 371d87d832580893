import { libraryConfig } from '@allot/tooling/tsup';

// The CLI, and the strategy table the benchmarks share (with its declarations).
export default libraryConfig({
  entry: ['src/cli.ts', 'src/strategies.ts'],
  format: ['esm'],
  dts: { entry: { strategies: 'src/strategies.ts' } },
});
