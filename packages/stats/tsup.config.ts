import { libraryConfig } from '@allot/tooling/tsup';

// Two entries: the statistics (`.`, which any runtime can bundle, a browser's included) and the
// metrics server (`./serve`, which needs `node:http`). `splitting` puts the modules both use in
// shared chunks, so `./serve` reads the same counters, snapshots and prom-client cache as `.`.
export default libraryConfig({
  entry: ['src/index.ts', 'src/serve.ts'],
  splitting: true,
});
