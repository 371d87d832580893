/**
 * The binding of the CUDA runtime (libcudart) and the plumbing every checked call shares: the
 * declared functions, the out-parameter slots, the current device, and the helpers that turn a
 * status into an error (through `check.ts`) or a slot into a pointer. `RuntimeLibrary`
 * (`runtime.ts`) adds the calls themselves, grouped by topic.
 */
import type { CudaCallArguments } from '../errors';
import { type BytesRequest, failure, STATUS_OUT_OF_MEMORY, type StatusSource } from './check';
import type { IKoffiLib, KoffiFunction } from './koffi';
import { outSlot, pointerTooLarge, slotBigInt, slotFits, slotNumber } from './pointers';

export const SUCCESS = 0;

type Fn = KoffiFunction;

function bind(lib: IKoffiLib) {
  const f = (signature: string): Fn => lib.func(signature);
  return {
    getErrorName: f('const char *cudaGetErrorName(int status)'),
    getErrorString: f('const char *cudaGetErrorString(int status)'),
    getLastError: f('int cudaGetLastError(void)'),
    peekAtLastError: f('int cudaPeekAtLastError(void)'),
    runtimeGetVersion: f('int cudaRuntimeGetVersion(_Out_ int *version)'),
    driverGetVersion: f('int cudaDriverGetVersion(_Out_ int *version)'),
    getDeviceCount: f('int cudaGetDeviceCount(_Out_ int *count)'),
    setDevice: f('int cudaSetDevice(int device)'),
    deviceSynchronize: f('int cudaDeviceSynchronize(void)'),
    getDeviceProperties: f('int cudaGetDeviceProperties(void *prop, int device)'),
    deviceGetAttribute: f('int cudaDeviceGetAttribute(_Out_ int *value, int attr, int device)'),
    deviceGetPCIBusId: f('int cudaDeviceGetPCIBusId(void *busId, int len, int device)'),
    memGetInfo: f('int cudaMemGetInfo(void *free, void *total)'),
    malloc: f('int cudaMalloc(void *devPtr, size_t size)'),
    free: f('int cudaFree(uint64_t devPtr)'),
    mallocManaged: f('int cudaMallocManaged(void *devPtr, size_t size, unsigned int flags)'),
    hostAlloc: f('int cudaHostAlloc(void *ptr, size_t size, unsigned int flags)'),
    freeHost: f('int cudaFreeHost(uint64_t ptr)'),
    hostRegister: f('int cudaHostRegister(uint64_t ptr, size_t size, unsigned int flags)'),
    hostUnregister: f('int cudaHostUnregister(uint64_t ptr)'),
    streamCreateWithFlags: f('int cudaStreamCreateWithFlags(void *stream, unsigned int flags)'),
    streamDestroy: f('int cudaStreamDestroy(uint64_t stream)'),
    streamSynchronize: f('int cudaStreamSynchronize(uint64_t stream)'),
    streamQuery: f('int cudaStreamQuery(uint64_t stream)'),
    eventCreateWithFlags: f('int cudaEventCreateWithFlags(void *event, unsigned int flags)'),
    eventRecord: f('int cudaEventRecord(uint64_t event, uint64_t stream)'),
    eventQuery: f('int cudaEventQuery(uint64_t event)'),
    eventSynchronize: f('int cudaEventSynchronize(uint64_t event)'),
    eventElapsedTime: f('int cudaEventElapsedTime(_Out_ float *ms, uint64_t start, uint64_t end)'),
    eventDestroy: f('int cudaEventDestroy(uint64_t event)'),
    memcpyToDevice: f('int cudaMemcpy(uint64_t dst, void *src, size_t count, int kind)'),
    memcpyToHost: f('int cudaMemcpy(void *dst, uint64_t src, size_t count, int kind)'),
    memcpyAddresses: f('int cudaMemcpy(uint64_t dst, uint64_t src, size_t count, int kind)'),
    memcpyToDeviceAsync: f(
      'int cudaMemcpyAsync(uint64_t dst, void *src, size_t count, int kind, uint64_t stream)',
    ),
    memcpyToHostAsync: f(
      'int cudaMemcpyAsync(void *dst, uint64_t src, size_t count, int kind, uint64_t stream)',
    ),
    memcpyAddressesAsync: f(
      'int cudaMemcpyAsync(uint64_t dst, uint64_t src, size_t count, int kind, uint64_t stream)',
    ),
    memset: f('int cudaMemset(uint64_t devPtr, int value, size_t count)'),
    memsetAsync: f(
      'int cudaMemsetAsync(uint64_t devPtr, int value, size_t count, uint64_t stream)',
    ),
    mallocAsync: f('int cudaMallocAsync(void *devPtr, size_t size, uint64_t stream)'),
    mallocFromPoolAsync: f(
      'int cudaMallocFromPoolAsync(void *devPtr, size_t size, uint64_t pool, uint64_t stream)',
    ),
    freeAsync: f('int cudaFreeAsync(uint64_t devPtr, uint64_t stream)'),
    deviceGetDefaultMemPool: f('int cudaDeviceGetDefaultMemPool(void *pool, int device)'),
    memPoolCreate: f('int cudaMemPoolCreate(void *pool, void *props)'),
    memPoolDestroy: f('int cudaMemPoolDestroy(uint64_t pool)'),
    memPoolSetAttribute: f('int cudaMemPoolSetAttribute(uint64_t pool, int attr, void *value)'),
    memPoolGetAttribute: f('int cudaMemPoolGetAttribute(uint64_t pool, int attr, void *value)'),
    memPoolTrimTo: f('int cudaMemPoolTrimTo(uint64_t pool, size_t minBytesToKeep)'),
  };
}

/** The runtime library, loaded and bound, with the helpers of its checked calls. */
export class RuntimeBinding implements StatusSource {
  readonly api = 'runtime' as const;
  /** Version of the runtime, `major * 1000 + minor * 10` (13000 for CUDA 13.0). */
  readonly version: number;
  protected readonly fn: ReturnType<typeof bind>;
  protected readonly slot = outSlot();
  protected readonly slot2 = outSlot();
  private currentDevice = -1;

  constructor(
    protected readonly lib: IKoffiLib,
    /** Where the library was loaded from. */
    readonly path: string,
  ) {
    this.fn = bind(lib);
    const out = [0];
    this.fn.runtimeGetVersion(out);
    this.version = out[0] ?? 0;
  }

  // ── status names (the checked helper's source) ───────────────────────────────────────────────
  statusName(status: number): string {
    return String(this.fn.getErrorName(status) ?? `status ${status}`);
  }

  statusDescription(status: number): string {
    return String(this.fn.getErrorString(status) ?? 'unknown status');
  }

  memoryInfo(device: number): { free: number; total: number } | null {
    try {
      if (this.fn.setDevice(device) !== SUCCESS) return null;
      this.currentDevice = device;
      if (this.fn.memGetInfo(this.slot, this.slot2) !== SUCCESS) return null;
      return { free: slotNumber(this.slot), total: slotNumber(this.slot2) };
    } catch {
      return null;
    }
  }

  protected fail(
    status: number,
    call: string,
    args: CudaCallArguments,
    request?: BytesRequest,
  ): Error {
    if (status === STATUS_OUT_OF_MEMORY) this.fn.getLastError(); // out of memory is not sticky
    return failure(this, status, call, args, request);
  }

  /** The pointer in the scratch slot; one at or above 2^53 is given back with `release`. */
  protected pointer(call: string, release?: (value: bigint) => void): number {
    if (slotFits(this.slot)) return slotNumber(this.slot);
    const value = slotBigInt(this.slot);
    release?.(value);
    throw pointerTooLarge(call, value);
  }

  useDevice(device: number): void {
    if (device === this.currentDevice) return;
    const s = this.fn.setDevice(device);
    if (s !== SUCCESS) throw this.fail(s, 'cudaSetDevice', { device });
    this.currentDevice = device;
  }
}
