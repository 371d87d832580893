import { libraryConfig } from '@allot/tooling/tsup';

// Two entries: the workloads, trace formats and replay (`.`, which any runtime can bundle, a
// browser's included) and the file readers (`./node`: `node:fs`, `node:zlib`, the shared trace
// folder). `splitting` puts the modules both use in shared chunks, so both entries parse into the
// same `Trace` and throw the same `TraceFormatError`. `shims` gives the CJS build a working
// `import.meta.url` (findTracesDir walks up from the module).
export default libraryConfig({
  entry: ['src/index.ts', 'src/node.ts'],
  splitting: true,
  shims: true,
});
