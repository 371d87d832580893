export {
  type CachingHostAllocator,
  type CachingHostAllocatorOptions,
  cachingHostAllocator,
} from './caching-host-allocator';
