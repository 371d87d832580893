export {
  CachingDeviceAllocator,
  type CachingDeviceAllocatorOptions,
  cachingDeviceAllocator,
} from './caching-device-allocator';
