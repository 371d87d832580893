import { libraryConfig } from '@allot/tooling/tsup';

export default libraryConfig({ entry: ['src/cli.ts'], format: ['esm'], dts: false });
