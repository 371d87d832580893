export { assertInBatches, batchParameters, inBatches, RUNS_PER_BATCH } from './batches';
export {
  type ConformanceProperty,
  checkConformance,
  checkConformanceAsync,
  propertyParameters,
} from './check-conformance';
export {
  type CompactingAllocator,
  type CompactionCheckOptions,
  type CompactionMoveLike,
  type CompactionPlanLike,
  checkCompaction,
  checkCompactionAsync,
} from './compaction';
export { ConformanceError } from './conformance-error';
export {
  type FailurePlan,
  failingAllocator,
  failingSource,
  failurePlan,
  forEachFailurePoint,
} from './failure-injection';
export type { MisuseVariant, Operation } from './operations';
export type {
  Capabilities,
  ConformanceOptions,
  ConformanceSubject,
  Invariant,
  Placement,
} from './options';
export { assertYielding, letGo, YIELD_AFTER_MS, yielding } from './yielding';
