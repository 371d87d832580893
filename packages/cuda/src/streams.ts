/**
 * Streams and events. A `CudaStream` is a queue of device work (`cudaStreamCreateWithFlags`); its
 * `handle` is the number that `@allot/caching` uses as a stream (`allocateOn(stream.handle, ...)`,
 * `recordStream(address, stream.handle)`). `streamEventHooks` implements the caching pool's
 * `StreamEvents` with real CUDA events, reusing destroyed ones as PyTorch does.
 *
 * Host buffers given to stream-ordered copies are held by the stream until it is synchronized (or
 * a query finds it idle), so the garbage collector cannot take them while the copy may still run.
 */
import { checkNonNegativeInteger, InvalidArgumentError } from '@allot/core';
import { openRuntime } from './ffi/open';
import type { RuntimeLibrary } from './ffi/runtime';
import type { DeviceOptions } from './options';

/** `cudaStreamNonBlocking`. */
const STREAM_NON_BLOCKING = 1;
/** `cudaEventDisableTiming`: cheaper events for synchronisation only. */
const EVENT_DISABLE_TIMING = 2;

const runtimes = new WeakMap<object, RuntimeLibrary>();

/** The runtime behind a stream or event of this package. */
export function runtimeOf(handleOwner: CudaStream | CudaEvent): RuntimeLibrary {
  return runtimes.get(handleOwner)!;
}

/** Device number, checked against the devices CUDA reports. */
export function checkDevice(device: number, count: number): void {
  checkNonNegativeInteger(device, 'device');
  if (device >= count) {
    throw new InvalidArgumentError(
      'device',
      device,
      `a device ordinal below ${count} (CUDA reports ${count} device(s))`,
    );
  }
}

/** Options of {@link createStream}. */
export interface StreamOptions extends DeviceOptions {
  /** Work on the stream does not wait for the legacy default stream. @defaultValue true */
  readonly nonBlocking?: boolean;
}

/** A CUDA stream. `handle` 0 is the legacy default stream. */
export class CudaStream implements Disposable {
  /** `cudaStream_t` as a number: what `@allot/caching` calls a stream. */
  readonly handle: number;
  /** Device the stream belongs to. */
  readonly device: number;
  private held: ArrayBufferView[] = [];
  private destroyed = false;

  /** @internal Use {@link createStream} or {@link defaultStream}. */
  constructor(runtime: RuntimeLibrary, handle: number, device: number) {
    runtimes.set(this, runtime);
    this.handle = handle;
    this.device = device;
  }

  /** Blocks until every piece of work queued on the stream has completed. */
  synchronize(): void {
    runtimeOf(this).streamSynchronize(this.handle);
    this.held = [];
  }

  /** Whether every piece of work queued on the stream has completed (never blocks). */
  query(): boolean {
    const done = runtimeOf(this).streamQuery(this.handle);
    if (done) this.held = [];
    return done;
  }

  /** Records a new event after the work queued so far. */
  record(event: CudaEvent = createEventFor(runtimeOf(this))): CudaEvent {
    runtimeOf(this).eventRecord(event.handle, this.handle);
    return event;
  }

  /** @internal Keeps a host buffer alive until the stream is next found idle. */
  hold(buffer: ArrayBufferView): void {
    this.held.push(buffer);
  }

  /** Destroys the stream (work already queued still completes). The default stream is kept. */
  destroy(): void {
    if (this.destroyed || this.handle === 0) return;
    runtimeOf(this).streamDestroy(this.handle);
    this.destroyed = true;
  }

  [Symbol.dispose](): void {
    this.destroy();
  }
}

/** A CUDA event: a marker in a stream's work. */
export class CudaEvent implements Disposable {
  /** `cudaEvent_t` as a number. */
  readonly handle: number;
  private destroyed = false;

  /** @internal Use {@link createEvent}. */
  constructor(runtime: RuntimeLibrary, handle: number) {
    runtimes.set(this, runtime);
    this.handle = handle;
  }

  /** Whether the work before the event has completed (never blocks). */
  query(): boolean {
    return runtimeOf(this).eventQuery(this.handle);
  }

  /** Blocks until the work before the event has completed. */
  synchronize(): void {
    runtimeOf(this).eventSynchronize(this.handle);
  }

  /** Milliseconds between `start` and this event (both created with `timing: true`). */
  elapsedSince(start: CudaEvent): number {
    return runtimeOf(this).eventElapsedMs(start.handle, this.handle);
  }

  destroy(): void {
    if (this.destroyed) return;
    runtimeOf(this).eventDestroy(this.handle);
    this.destroyed = true;
  }

  [Symbol.dispose](): void {
    this.destroy();
  }
}

function createEventFor(runtime: RuntimeLibrary, timing = false): CudaEvent {
  return new CudaEvent(runtime, runtime.eventCreate(timing ? 0 : EVENT_DISABLE_TIMING));
}

/**
 * A new stream on a device.
 * @throws CudaUnavailableError when CUDA cannot be used here.
 */
export function createStream(options: StreamOptions = {}): CudaStream {
  const { runtime, deviceCount } = openRuntime(options);
  const device = options.device ?? 0;
  checkDevice(device, deviceCount);
  const flags = (options.nonBlocking ?? true) ? STREAM_NON_BLOCKING : 0;
  return new CudaStream(runtime, runtime.streamCreate(flags, device), device);
}

/** The legacy default stream (handle 0) of a device. */
export function defaultStream(options: DeviceOptions = {}): CudaStream {
  const { runtime, deviceCount } = openRuntime(options);
  const device = options.device ?? 0;
  checkDevice(device, deviceCount);
  return new CudaStream(runtime, 0, device);
}

/** Options of {@link createEvent}. */
export interface EventOptions extends DeviceOptions {
  /** Record timestamps, for {@link CudaEvent.elapsedSince}. @defaultValue false */
  readonly timing?: boolean;
}

/**
 * A new event.
 * @throws CudaUnavailableError when CUDA cannot be used here.
 */
export function createEvent(options: EventOptions = {}): CudaEvent {
  const { runtime, deviceCount } = openRuntime(options);
  const device = options.device ?? 0;
  checkDevice(device, deviceCount);
  runtime.useDevice(device);
  return createEventFor(runtime, options.timing ?? false);
}

/** The caching pool's `StreamEvents` over real CUDA events (handles are numbers). */
export interface StreamEventHooks {
  recordEvent(stream: number): number;
  queryEvent(event: number): boolean;
  synchronizeEvent(event: number): void;
  destroyEvent(event: number): void;
  /** Destroys the spare events kept for reuse. */
  disposeEvents(): void;
}

/** Event hooks on `device`, keeping destroyed events for reuse (event creation is not free). */
export function streamEventHooks(runtime: RuntimeLibrary, device: number): StreamEventHooks {
  const spare: number[] = [];
  return {
    recordEvent(stream: number): number {
      runtime.useDevice(device);
      const event = spare.pop() ?? runtime.eventCreate(EVENT_DISABLE_TIMING);
      runtime.eventRecord(event, stream);
      return event;
    },
    queryEvent: (event: number) => runtime.eventQuery(event),
    synchronizeEvent: (event: number) => runtime.eventSynchronize(event),
    destroyEvent(event: number): void {
      spare.push(event);
    },
    disposeEvents(): void {
      while (spare.length > 0) runtime.eventDestroy(spare.pop()!);
    },
  };
}

/** The caching pool's stream hooks as members of a source (without `disposeEvents`). */
export function eventMembers(
  hooks: StreamEventHooks,
): Pick<StreamEventHooks, 'recordEvent' | 'queryEvent' | 'synchronizeEvent' | 'destroyEvent'> {
  return {
    recordEvent: hooks.recordEvent,
    queryEvent: hooks.queryEvent,
    synchronizeEvent: hooks.synchronizeEvent,
    destroyEvent: hooks.destroyEvent,
  };
}
