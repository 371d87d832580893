/**
 * `@allot/lab/engine`: the lab without Node.js, for a browser or a Web Worker. It reads traces
 * from streams of bytes, replays them as `allot-lab replay` does (the caching rows, the recording's
 * own settings, what-if settings and devices), and searches the settings as `allot-lab tune` does.
 * Nothing under this entry imports a Node.js module (`engine.test.ts` bundles it for a browser
 * with nothing external). The report's page data (`@allot/lab/report`) and its client modules
 * (`@allot/lab/ui`) are entries of their own.
 */
export {
  type AllocatorSettings,
  DEFAULT_SETTINGS,
  formatAllocConf,
  parseAllocConf,
} from '@allot/caching';
export { type ReadProgress, streamTraces, type Trace } from '@allot/workloads';
export {
  type Advice,
  type AdviceReason,
  adviceOf,
  adviceParagraph,
  cardTooSmall,
} from './analysis/advice';
export {
  ASSUMED_MEMORY,
  type DeviceModel,
  type DeviceOrigin,
  describeDevice,
  recordedCard,
  replayDevice,
  type SearchDevice,
  searchDevice,
} from './analysis/device';
export type { LayoutView, RowResult, Series } from './analysis/measure';
export { type GroupBy, type GrownGroup, grownGroups, peakGroupsOf } from './analysis/peak-groups';
export { BLOCK_FIELDS, type PoolState, PoolStepper } from './analysis/pool-stepper';
export { MAX_SIDECAR_BYTES, sidecarPath, withSidecar } from './analysis/sidecar';
export {
  liveBlocksAt,
  type StackNode,
  type StackTree,
  stackTreeAt,
  stackTreeOf,
} from './analysis/stack-tree';
export {
  GARBAGE_COLLECTION_THRESHOLDS,
  MAX_SPLIT_VALUES_MB,
  type PoolRun,
  ROUNDUP_DIVISIONS,
  runPool,
  segmentCalls,
  type TuneOptions,
  type TuneResult,
  tune,
} from './analysis/tune';
export { adviseJob, type JobAdvice, type RankSettings } from './job/advice';
export { type JobAdviceText, type JobRankNote, jobAdviceText } from './job/advice-text';
export { jobCandidates } from './job/candidates';
export {
  type FailedRankNote,
  failedRanksText,
  failedRankText,
  mixedSettingsText,
  rankList,
  type SettingGroup,
  settingGroups,
} from './job/job-notes';
export { isTraceName, nameOf, newestOfEachRank, type RankNaming } from './job/rank-name';
export { canonicalOf, describeTrace } from './replay-rows';
export type { Fidelity, LabResults, TorchFigures, WorkloadResult } from './run';
export {
  formatBytes,
  formatCount,
  formatPercent,
  formatRatio,
  formatTorchSize,
  parseSize,
} from './units';
export {
  type WhatIf,
  type WhatIfAnswer,
  WhatIfLab,
  withoutFrames,
} from './what-if';
