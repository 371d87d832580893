import { libraryConfig } from '@allot/tooling/tsup';

export default libraryConfig({
  entry: [
    'src/cli.ts',
    'src/worker.ts',
    'src/raw-cli.ts',
    'src/raw-worker.ts',
    'src/pair-instructions.ts',
    'src/index-replay.ts',
    'src/snapshot-gen.ts',
    'src/snapshot-read.ts',
  ],
  format: ['esm'],
  dts: false,
});
