import { libraryConfig } from '@allot/tooling/tsup';

export default libraryConfig();
