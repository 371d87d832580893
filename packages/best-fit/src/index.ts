export {
  type BestFitAllocator,
  type BestFitOptions,
  bestFit,
  type CompactionMove,
  type CompactionPlan,
  type CompactOptions,
  type FitMode,
  goodFit,
  worstFit,
} from './best-fit';
