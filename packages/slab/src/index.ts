export { defaultSizeClasses, transformerSizeClasses } from './size-classes';
export { type Slab, type SlabClassStats, type SlabOptions, slab } from './slab';
