/** Packages (Node built-ins left out) imported at run time from `entry` and what it reaches, sorted. */
export declare function runtimeImports(entry: string): string[];
