import { libraryConfig } from '@allot/tooling/tsup';

export default libraryConfig({ entry: ['src/index.ts', 'src/vitest.ts'], external: ['vitest'] });
