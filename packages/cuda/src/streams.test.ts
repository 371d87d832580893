import { describe, expect, it } from 'vitest';
import { fakeCuda, MiB } from '../test/fake-cuda';
import { copyDeviceToHost, copyHostToDevice, fillDevice } from './copies';
import { deviceSource } from './device-source';
import { CudaError } from './errors';
import { createEvent, createStream, defaultStream } from './streams';

describe('streams and events (fake CUDA with queued work)', () => {
  it('work on a stream completes in order, when the stream is synchronized', () => {
    const cuda = fakeCuda({ queryLatency: 2 });
    const source = deviceSource(cuda);
    const region = source.acquire(MiB)!;
    const stream = createStream(cuda);
    fillDevice(region, 7, 4096, { stream });
    const out = new Uint8Array(4096);
    copyDeviceToHost(out, region, { stream });
    expect(out[0]).toBe(0); // not yet: the copy is queued behind the fill
    expect(stream.query()).toBe(false);
    stream.synchronize();
    expect(out.every((b) => b === 7)).toBe(true);
    expect(stream.query()).toBe(true);
    stream.destroy();
    stream.destroy(); // idempotent
  });

  it('events mark a point in a stream: query, then synchronize', () => {
    const cuda = fakeCuda({ queryLatency: 1 });
    const region = deviceSource(cuda).acquire(MiB)!;
    using stream = createStream(cuda);
    copyHostToDevice(region, new Uint8Array(1024).fill(3), { stream });
    const event = stream.record();
    expect(event.query()).toBe(false);
    event.synchronize();
    expect(event.query()).toBe(true);
    using start = createEvent({ ...cuda, timing: true });
    using end = createEvent({ ...cuda, timing: true });
    stream.record(start);
    stream.record(end);
    end.synchronize();
    expect(end.elapsedSince(start)).toBeGreaterThanOrEqual(0);
    event.destroy();
  });

  it('a failed call names its status, the call and its arguments', () => {
    const cuda = fakeCuda();
    const source = deviceSource(cuda);
    const region = source.acquire(MiB)!;
    source.release(region);
    let error: unknown;
    try {
      copyHostToDevice(region, new Uint8Array(16), cuda); // the memory is gone
    } catch (e) {
      error = e;
    }
    expect(CudaError.isInstance(error)).toBe(true);
    const e = error as CudaError;
    expect(e.code).toBe('ALLOT_CUDA_ERROR');
    expect([e.status, e.statusName, e.description, e.call, e.api]).toEqual([
      1,
      'cudaErrorInvalidValue',
      'invalid argument',
      'cudaMemcpy',
      'runtime',
    ]);
    expect(e.args).toEqual({
      dst: `0x${region.address.toString(16)}`,
      src: 'host buffer',
      count: 16,
      kind: 'cudaMemcpyHostToDevice',
    });
    expect(e.message).toBe(
      `cudaMemcpy(dst=0x${region.address.toString(16)}, src=host buffer, count=16, kind=cudaMemcpyHostToDevice) failed: cudaErrorInvalidValue (1): invalid argument.`,
    );
  });

  it('the default stream is handle 0 and is never destroyed', () => {
    const stream = defaultStream(fakeCuda());
    expect(stream.handle).toBe(0);
    stream.destroy();
    stream.synchronize();
  });
});
