export { formatCpuList, parseCpuList } from './cpu-list';
export {
  type CudaDeviceNodeOptions,
  type CudaHooks,
  loadCudaHooks,
  nodeOfCudaDevice,
} from './cuda-hooks';
export {
  type MemlockLimitDetails,
  MemlockLimitError,
  NativeCallError,
  NumaErrorCode,
} from './errors';
export type { NumaBackend } from './ffi/native';
export {
  type HugePageKind,
  type NumaPolicy,
  type NumaRegion,
  type NumaSource,
  type NumaSourceOptions,
  numaSource,
  type PinMode,
} from './numa-source';
export {
  type MemoryPolicy,
  memoryPolicy,
  type Placement,
  type PlacementOptions,
  type PolicyMode,
  placement,
} from './placement';
export {
  type NumaNode,
  nodeOfCpu,
  nodeOfPciDevice,
  normalizePciBusId,
  type Topology,
  type TopologyOptions,
  topology,
} from './topology';
