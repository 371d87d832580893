import { libraryConfig } from '@allot/tooling/tsup';

// minifySyntax inlines the module-level numeric constants (field offsets, record layouts) into the
// hot paths: Node 20's V8 does not fold a module-level `const` and would load and check it on
// every allocate and free. Identifiers and whitespace stay as written.
export default libraryConfig({ minifySyntax: true });
