/**
 * `@allot/lab/engine`: the lab without Node.js, for a browser or a Web Worker. It reads traces
 * from streams of bytes, replays them as `allot-lab replay` does (the caching rows, the recording's
 * own settings, what-if settings and devices), and searches the settings as `allot-lab tune` does.
 * Nothing under this entry imports a Node.js module (`engine.test.ts` bundles it for a browser
 * with nothing external); the report page (`report/html.ts`) reads uPlot's files with `node:fs`
 * and is not part of it.
 */
export {
  type AllocatorSettings,
  DEFAULT_SETTINGS,
  formatAllocConf,
  parseAllocConf,
} from '@allot/caching';
export { type ReadProgress, streamTraces, type Trace } from '@allot/workloads';
export { adviseJob, type JobAdvice, type RankSettings } from './job/advice';
export { jobCandidates } from './job/candidates';
export { isTraceName, nameOf, type RankNaming } from './job/rank-name';
export type { LayoutView, RowResult, Series } from './measure';
export { type GroupBy, type GrownGroup, grownGroups, peakGroupsOf } from './peak-groups';
export type { DeviceModel } from './pool-instance';
export { BLOCK_FIELDS, type PoolState, PoolStepper } from './pool-state';
export { canonicalOf, describeTrace } from './replay-rows';
export { type Advice, adviceOf } from './report/explain';
export type { Fidelity, LabResults, TorchFigures, WorkloadResult } from './run';
export {
  ASSUMED_MEMORY,
  describeDevice,
  deviceOf,
  GARBAGE_COLLECTION_THRESHOLDS,
  MAX_SPLIT_VALUES_MB,
  type PoolRun,
  ROUNDUP_DIVISIONS,
  runPool,
  segmentCalls,
  type TuneOptions,
  type TuneResult,
  tune,
} from './tune';
export { formatBytes, formatCount, formatPercent, formatRatio, parseSize } from './units';
export {
  type RowBrief,
  type TraceBrief,
  type WhatIf,
  type WhatIfAnswer,
  WhatIfLab,
  withoutFrames,
} from './what-if';
