import type { Options } from 'tsup';
/** tsup options shared by every published package; pass overrides for extra entries. */
export declare function libraryConfig(overrides?: Options): Options | Options[];
