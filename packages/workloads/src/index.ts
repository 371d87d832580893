export {
  DEFAULT_MACHINE_LIMITS,
  DEFAULT_UNPICKLE_LIMITS,
  type MachineLimits,
  type UnpickledValue,
  type UnpickleLimits,
  type UnpickleOptions,
  unpickle,
} from '@allot/pickle';
export {
  type AddressSource,
  type AddressSourceOptions,
  addressSource,
  type RecordedAddresses,
} from './address-source';
export {
  type CapacitySearchOptions,
  type CapacitySearchResult,
  type ProbeOutcome,
  searchCapacity,
} from './capacity-search';
export { TRACE_FORMAT_ERROR_CODE, TraceFormatError, type TraceLocationUnit } from './errors';
export {
  type InferenceServingOptions,
  inferenceServing,
} from './generators/inference-serving';
export { type LarsonOptions, larson } from './generators/larson';
export { type RandomMixOptions, randomMix } from './generators/random-mix';
export { type SameSizePairsOptions, sameSizePairs } from './generators/same-size';
export {
  type TorchSnapshotOptions,
  type TorchSnapshotSummary,
  torchSnapshotChunks,
  writeTorchSnapshot,
} from './generators/snapshot-generator';
export {
  type TrainingBudget,
  type TrainingLoopOptions,
  trainingBudget,
  trainingLoop,
} from './generators/training-loop';
export { Random } from './random';
export { formatCsvTrace, parseCsvTrace } from './readers/csv-trace';
export { Action as EntryAction, DeviceEntries } from './readers/device-entries';
export type { EndBlock, EndSegment } from './readers/end-state';
export {
  formatMallocTrace,
  type ParseTraceOptions,
  parseMallocTrace,
} from './readers/malloc-trace';
export {
  DEFAULT_MAX_INPUT_BYTES,
  DEFAULT_MAX_SNAPSHOT_EVENTS,
  DEFAULT_MAX_STREAM_BYTES,
  detectDecompressedFormat,
  detectTraceFormat,
  type ReadTraceFileOptions,
  TRACE_FORMATS,
  type TraceFormat,
} from './readers/parse-traces';
export { parseAddress } from './readers/recorded-values';
export { formatRmmLog, parseRmmLog, RMM_LOG_HEADER } from './readers/rmm-log';
export { SnapshotReader, type SnapshotReaderOptions } from './readers/snapshot-reader';
export {
  type ParseTorchSnapshotOptions,
  parseTorchSnapshot,
  type SnapshotRecords,
  snapshotTraces,
} from './readers/snapshot-traces';
export { MAX_STACK_FRAMES, StackFrames, StackTable } from './readers/stack-table';
export { type ParseTorchProfilerOptions, parseTorchProfilerTrace } from './readers/torch-profiler';
export {
  type Gunzip,
  parseTraces,
  type ReadProgress,
  readBlobTraces,
  type StreamTracesOptions,
  streamTraces,
  type TraceSource,
  webGunzip,
} from './readers/trace-stream';
export {
  NOT_LIVE,
  Replayer,
  type ReplayOptions,
  type ReplayResult,
  type ReplayTarget,
  replay,
} from './replay';
export {
  DEFAULT_MAX_EVENTS,
  EventKind,
  peakLiveBytes,
  type RecordedOom,
  type RecordedSegment,
  type SizeFilter,
  type StackFrame,
  type StartBlock,
  type StartSegment,
  type StartState,
  summarizeTrace,
  type Trace,
  TraceBuilder,
  type TraceMeta,
  type TraceSummary,
} from './trace';
