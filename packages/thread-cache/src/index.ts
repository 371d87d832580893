export { ThreadCacheError, ThreadCacheErrorCode } from './errors';
export { DEFAULT_MAIN_THREAD_LOCK_TIMEOUT, type HeapLockOptions } from './heap-lock';
export {
  attachHeap,
  type HeapViewOptions,
  type ReclaimResult,
  type SharedHeap,
  type SharedHeapDescriptor,
  type SharedHeapStats,
  sharedHeap,
  type WorkerCacheStats,
} from './shared-heap';
export { type SharedHeapOptions, sharedHeapStateBytes } from './shared-layout';
export { defaultThreadCacheSizeClasses } from './size-classes';
export { type ThreadCache, type ThreadCacheOptions, threadCache } from './thread-cache';
