/**
 * The node layout of {@link OrderedIndex}, in a module of its own so that the build writes each
 * offset into its uses as a literal (see `constants.ts`).
 */

/** Int32 words per node (left, right, parent, priority): one node's links share a cache line. */
export const LINKS = 4;
export const LEFT = 0;
export const RIGHT = 1;
export const PARENT = 2;
export const PRIORITY = 3;
/** Float64 words per node (primary key, secondary key, value, subtree maximum). */
export const FIELDS = 4;
export const PRIMARY = 0;
export const SECONDARY = 1;
export const VALUE = 2;
export const MAX = 3;
