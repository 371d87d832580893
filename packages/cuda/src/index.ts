export {
  type CopyOptions,
  copyDeviceToDevice,
  copyDeviceToHost,
  copyHostToDevice,
  type DeviceCopyOptions,
  type DeviceSpan,
  deviceSpan,
  fillDevice,
} from './copies';
export {
  type CudaDeviceMemorySource,
  type CudaRegion,
  DEVICE_GRANULARITY,
  type DeviceMemoryInfo,
  type DeviceSource,
  type DeviceSourceOptions,
  deviceSource,
} from './device-source';
export {
  type CudaDeviceInfo,
  type CudaStatus,
  cudaStatus,
  type DevicesOptions,
  devices,
  isAvailable,
  PCI_DEVICES_PATH,
} from './devices';
export {
  type CudaApi,
  type CudaAttempt,
  type CudaCallArguments,
  CudaError,
  CudaErrorCode,
  type CudaErrorDetails,
  type CudaUnavailableDetails,
  CudaUnavailableError,
} from './errors';
export {
  type ExpandableRegion,
  type ExpandableSource,
  type ExpandableSourceOptions,
  expandableSource,
} from './expandable-source';
export {
  ManagedAdvice,
  type ManagedLocation,
  type ManagedRegion,
  type ManagedSource,
  type ManagedSourceOptions,
  managedSource,
} from './managed-source';
export type { CudaLibraryOptions, DeviceOptions } from './options';
export {
  type HostMemory,
  type HostRegistration,
  PINNED_GRANULARITY,
  type PinnedRegion,
  type PinnedSource,
  type PinnedSourceOptions,
  pinnedSource,
  type RegisterHostMemoryOptions,
  registerHostMemory,
} from './pinned-source';
export {
  type MemoryPoolSource,
  type MemoryPoolSourceOptions,
  memoryPoolSource,
} from './pool-source';
export {
  CudaEvent,
  CudaStream,
  createEvent,
  createStream,
  defaultStream,
  type EventOptions,
  type StreamOptions,
} from './streams';
