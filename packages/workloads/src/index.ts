export { TRACE_FORMAT_ERROR_CODE, TraceFormatError } from './errors';
export {
  type InferenceServingOptions,
  inferenceServing,
} from './generators/inference-serving';
export { type LarsonOptions, larson } from './generators/larson';
export { type RandomMixOptions, randomMix } from './generators/random-mix';
export { type SameSizePairsOptions, sameSizePairs } from './generators/same-size';
export {
  type TrainingBudget,
  type TrainingLoopOptions,
  trainingBudget,
  trainingLoop,
} from './generators/training-loop';
export { Random } from './random';
export { formatCsvTrace, parseCsvTrace } from './readers/csv-trace';
export {
  formatMallocTrace,
  type ParseTraceOptions,
  parseMallocTrace,
} from './readers/malloc-trace';
export {
  detectTraceFormat,
  type FindTracesDirOptions,
  findTracesDir,
  type ReadTraceFileOptions,
  readTraceFile,
  TRACES_DIR_ENV,
  type TraceFormat,
} from './readers/read-trace-file';
export {
  Replayer,
  type ReplayOptions,
  type ReplayResult,
  type ReplayTarget,
  replay,
} from './replay';
export {
  EventKind,
  peakLiveBytes,
  type SizeFilter,
  summarizeTrace,
  type Trace,
  TraceBuilder,
  type TraceMeta,
  type TraceSummary,
} from './trace';
