export { DEFAULT_MACHINE_LIMITS, type MachineHooks, type MachineLimits } from './hooks';
export { PickleMachine, withoutFastPaths } from './machine';
export type { MachineOptions } from './machine-state';
export { Op, refusal } from './opcodes';
export {
  PickleFloat,
  PickleTuple,
  type PickleValue,
  pickle,
  pickleFloat,
  pickleTuple,
} from './pickle';
export {
  PICKLE_ERROR_CODE,
  PickleError,
  type PickleErrorFactory,
  pickleErrors,
} from './pickle-error';
export {
  DEFAULT_UNPICKLE_LIMITS,
  type PlainOptions,
  plainValue,
  typeOf,
  type UnpickledValue,
  type UnpickleLimits,
  type UnpickleOptions,
  unpickle,
} from './unpickle';
export { CONSUMED, type FrameHooks, machineTypeOf, PDict, PList } from './values';
export { BATCH_SIZE, ItemBatches, PickleWriter } from './writer';
