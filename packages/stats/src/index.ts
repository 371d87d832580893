export {
  PickleFloat,
  PickleTuple,
  type PickleValue,
  pickle,
  pickleFloat,
  pickleTuple,
} from '@allot/pickle';
export type { Counter, Counters } from './counters';
export {
  type DiagnosisSource,
  diagnose,
  errorFromDiagnosis,
  type OutOfMemoryCause,
  type OutOfMemoryDiagnosis,
  outOfMemoryError,
} from './diagnose';
export { externalFragmentation, type FragmentationFigures, fragmentation } from './fragmentation';
export {
  flattenPoolStats,
  type MemoryStats,
  memoryStats,
  type PoolStatsFallback,
} from './memory-stats';
export { type MemorySummaryOptions, memorySummary } from './memory-summary';
export {
  findPoolStatsSource,
  isPoolStatsSource,
  type PoolFigures,
  type PoolLayoutBlock,
  type PoolLayoutSegment,
  type PoolName,
  type PoolStatsReport,
  type PoolStatsSource,
  type StatFamily,
  type StatsSink,
} from './pool-stats';
export type { PromClientLike, RegistryLike } from './prom-client-loader';
export { type MetricsHandle, type MetricsOptions, registerMetrics } from './prometheus';
export { type HistogramBucket, histogramOf, type SizeHistogram } from './size-histogram';
export type { BlockState, MemorySnapshot, SnapshotBlock, SnapshotSegment } from './snapshot';
export {
  DEFAULT_ALLOCATOR_SETTINGS,
  type TorchAnnotation,
  type TorchBlock,
  type TorchSegment,
  type TorchSnapshot,
  type TorchTraceAction,
  type TorchTraceEntry,
  toTorchSnapshot,
  toTorchSnapshotJson,
  toTorchSnapshotPickle,
} from './snapshot-export';
export type { StackFrame } from './stack-frames';
export type { AnnotationStage, TraceAction, TraceEvent, TraceOptions } from './trace-buffer';
export {
  toVmaDump,
  type VmaBlock,
  type VmaDedicatedAllocation,
  type VmaDump,
  type VmaDumpOptions,
  type VmaPool,
  type VmaStats,
  type VmaSuballocation,
  vmaDumpToLayout,
} from './vma-dump';
export {
  type OutOfMemoryObserver,
  StatsAllocator,
  type WithStatsOptions,
  withStats,
} from './with-stats';
