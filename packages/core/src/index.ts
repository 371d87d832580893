export { allocateOrThrow, outOfMemoryFor } from './allocate-or-throw';
export type { Adaptor, Allocator, Layout, LayoutBlock, LayoutSegment, Usage } from './allocator';
export { type Fallback, fallback } from './combinators/fallback';
export { type Limited, type LimitOptions, limit } from './combinators/limit';
export { type Segregated, type SegregateOptions, segregate } from './combinators/segregate';
export { INV_TWO_POW_32, TWO_POW_32 } from './constants';
export {
  AllotError,
  classifyOutOfMemory,
  ErrorCode,
  InvalidArgumentError,
  InvalidFreeError,
  type InvalidFreeReason,
  type OutOfMemoryDetails,
  OutOfMemoryError,
  type OutOfMemoryReason,
  UnsupportedError,
} from './errors';
export { type FormatBytesOptions, formatBytes } from './format';
export {
  type HostRegion,
  type HostSource,
  type HostSourceOptions,
  hostSource,
} from './host-source';
export { lazyModule } from './lazy-module';
export type { MemorySource, Region } from './memory-source';
export { labelledLayout, sumUsage } from './usage';
export {
  alignDown,
  alignUp,
  type CheckedRange,
  checkAlignment,
  checkNonNegativeInteger,
  checkRange,
  checkRequest,
  checkSize,
  isAligned,
  isPowerOfTwo,
  log2OfPowerOfTwo,
  nextPowerOfTwo,
} from './validate';
