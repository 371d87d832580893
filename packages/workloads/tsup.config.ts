import { libraryConfig } from '@allot/tooling/tsup';

// `shims` gives the CJS build a working `import.meta.url` (findTracesDir walks up from the module).
export default libraryConfig({ shims: true });
