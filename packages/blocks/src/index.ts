export { AddressMap } from './address-map';
export { BlockState, BlockTable, growFloat, growInt, NIL } from './block-table';
export {
  type CompactionMove,
  type CompactionPlan,
  type CompactOptions,
  DEFAULT_ALIGNMENT,
  FitAllocator,
  type FitOptions,
} from './fit-allocator';
export {
  blockFits,
  type FreeIndex,
  type FreeIndexFactory,
  fitsIn,
  paddingFor,
  smallerOf,
} from './free-index';
export { OrderedIndex, type OrderedIndexOptions } from './ordered-index';
export { OrderedTree, type OrderedTreeOptions } from './ordered-tree';
export {
  CLASS_COUNT,
  classMinimum,
  floorLog2,
  lowestBit,
  SECOND_LEVEL_COUNT,
  SECOND_LEVEL_LOG2,
  SegregatedLists,
  sizeClass,
} from './segregated-lists';
