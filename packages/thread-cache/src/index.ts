export { ThreadCacheError, ThreadCacheErrorCode } from './errors';
export { DEFAULT_MAIN_THREAD_LOCK_TIMEOUT, type HeapLockOptions } from './heap-lock';
export { attachHeap, sharedHeap } from './shared-heap';
export type {
  HeapViewOptions,
  ReclaimResult,
  SharedHeap,
  SharedHeapDescriptor,
  SharedHeapStats,
  WorkerCacheStats,
} from './shared-heap-types';
export { type SharedHeapOptions, sharedHeapStateBytes } from './shared-layout';
export { defaultThreadCacheSizeClasses } from './size-classes';
export { type ThreadCache, type ThreadCacheOptions, threadCache } from './thread-cache';
