export {
  type CompactionMove,
  type CompactionPlan,
  type CompactOptions,
  type FirstFitAllocator,
  type FirstFitOptions,
  firstFit,
} from './first-fit';
