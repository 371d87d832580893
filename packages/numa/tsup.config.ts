import { libraryConfig } from '@allot/tooling/tsup';

// `shims`: the CommonJS build needs `import.meta.url` to load koffi lazily (src/ffi/koffi.ts).
export default libraryConfig({ shims: true });
