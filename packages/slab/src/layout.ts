/**
 * Layouts of the slab allocator's per-class typed arrays: named offsets, one module of their own so that the
 * build inlines them (an imported primitive `const` becomes a literal; Node 20 would otherwise load
 * and check a module-level `const` on every use in the hot paths).
 */

// Per-class integers (`classInts`, stride CLASS_INTS).
export const CLASS_OBJECTS = 0;
/** Head and tail of the list of slabs with a free object (partial ones first, then empty ones). */
export const CLASS_HEAD = 1;
export const CLASS_TAIL = 2;
export const CLASS_SLABS = 3;
export const CLASS_FULL = 4;
/** Empty slabs on the list other than its head (whose emptiness takes and frees change freely). */
export const CLASS_EMPTY = 5;
export const CLASS_INTS = 8;
// Per-class figures (`classFigures`, stride CLASS_FIGURES), in bytes.
export const CLASS_SIZE = 0;
export const CLASS_ALIGNMENT = 1;
export const CLASS_SLAB_BYTES = 2;
/** Alignment asked of the upstream for a slab of the class. */
export const CLASS_SLAB_ALIGNMENT = 3;
export const CLASS_HELD = 4;
export const CLASS_FIGURES = 8;
