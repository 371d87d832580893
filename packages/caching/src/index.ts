export {
  ALLOC_CONF_ENV,
  ALLOC_CONF_PYTORCH_VERSION,
  type AllocatorBackend,
  type AllocatorSettings,
  allocConfFromEnv,
  DEFAULT_SETTINGS,
  PYTORCH_ALLOC_CONF_ENVS,
  parseAllocConf,
} from './alloc-conf';
export {
  CachingPool,
  type CachingPoolOptions,
  cachingPool,
  type FreeMemoryCallback,
  PrivatePool,
  type PrivatePoolScope,
} from './caching-pool';
export {
  LARGE_BUFFER,
  MIN_BLOCK_SIZE,
  MIN_LARGE_ALLOC,
  ROUND_LARGE,
  SMALL_BUFFER,
  SMALL_SIZE,
} from './constants';
export { countAllocConfKeys, formatAllocConf } from './format-alloc-conf';
export { formatSize } from './oom-message';
export { checkPoolState, type PoolStateBlock, type PoolStateSegment } from './pool-state';
export { allocationSize, roundSize } from './size-policy';
export {
  isStreamOrderedSource,
  type Stream,
  type StreamEvents,
  type StreamOrderedSource,
} from './stream-source';
