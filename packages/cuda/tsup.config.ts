import { libraryConfig } from '@allot/tooling/tsup';

// Two entries: the memory sources (`.`, needing only @allot/core and koffi) and the caching device
// allocator (`./caching`, which also needs the optional peer @allot/caching). `splitting` puts the
// modules both use in shared chunks, so `./caching` runs the same sources (one library cache, one
// set of error classes) instead of a copy. `shims`: the CommonJS build needs `import.meta.url` to
// load koffi lazily (src/ffi/koffi.ts).
export default libraryConfig({
  entry: ['src/index.ts', 'src/caching.ts'],
  splitting: true,
  shims: true,
});
