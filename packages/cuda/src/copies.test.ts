import { InvalidArgumentError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { fakeCuda, MiB } from '../test/fake-cuda';
import { cachingDeviceAllocator } from './caching-device-allocator';
import {
  copyDeviceToDevice,
  copyDeviceToHost,
  copyHostToDevice,
  deviceSpan,
  fillDevice,
} from './copies';
import { deviceSource } from './device-source';
import { createStream } from './streams';

describe('copies (fake CUDA)', () => {
  it('host → device → device → host, with typed arrays, offsets and DataViews', () => {
    const cuda = fakeCuda();
    const source = deviceSource(cuda);
    const a = source.acquire(MiB)!;
    const b = source.acquire(MiB)!;
    const floats = Float32Array.from({ length: 1000 }, (_, i) => i * 0.5);
    copyHostToDevice(a, floats, { ...cuda, offset: 4096 });
    copyDeviceToDevice(b, a, floats.byteLength, { ...cuda, srcOffset: 4096, dstOffset: 8 });
    const back = new Float32Array(1000);
    copyDeviceToHost(back, b, { ...cuda, offset: 8 });
    expect(back).toEqual(floats);
    // A view into the middle of a larger buffer copies only its own bytes.
    const big = new Uint8Array(64).fill(9);
    const window = new DataView(big.buffer, 16, 8);
    copyDeviceToHost(window, a, { ...cuda, offset: 4096 });
    expect([...big.subarray(0, 16)].every((x) => x === 9)).toBe(true);
    expect([...big.subarray(24)].every((x) => x === 9)).toBe(true);
    expect(new Float32Array(big.buffer.slice(16, 24))).toEqual(floats.subarray(0, 2));
    fillDevice(a, 0xab, 16, cuda);
    const head = new Uint8Array(16);
    copyDeviceToHost(head, a, cuda);
    expect([...head].every((x) => x === 0xab)).toBe(true);
  });

  it('checks bounds against the allocation before any native call, and changes nothing', () => {
    const cuda = fakeCuda();
    const region = deviceSource(cuda).acquire(4096)!;
    copyHostToDevice(region, new Uint8Array(4096).fill(1), cuda);
    expect(() => copyHostToDevice(region, new Uint8Array(4097), cuda)).toThrow(
      InvalidArgumentError,
    );
    expect(() => copyHostToDevice(region, new Uint8Array(8), { ...cuda, offset: 4090 })).toThrow(
      /at most 6 bytes/,
    );
    expect(() => copyDeviceToHost(new Uint8Array(8), region, { ...cuda, offset: -1 })).toThrow(
      InvalidArgumentError,
    );
    expect(() => copyDeviceToDevice(region, region, 4097, cuda)).toThrow(InvalidArgumentError);
    expect(() => fillDevice(region, 256, 1, cuda)).toThrow(InvalidArgumentError);
    expect(() => copyHostToDevice({ address: 2 ** 53, size: 1 }, new Uint8Array(1), cuda)).toThrow(
      InvalidArgumentError,
    );
    const out = new Uint8Array(4096);
    copyDeviceToHost(out, region, cuda);
    expect(out.every((x) => x === 1)).toBe(true);
  });

  it('stream-ordered copies hold the host buffer until the stream is synchronized', () => {
    const cuda = fakeCuda({ queryLatency: 3 });
    const region = deviceSource(cuda).acquire(MiB)!;
    const stream = createStream(cuda);
    const data = new Uint32Array(4096).map((_, i) => i * 7);
    copyHostToDevice(region, data, { stream });
    data.fill(0); // the driver staged the pageable bytes at the call
    const out = new Uint32Array(4096);
    copyDeviceToHost(out, region, { stream });
    expect(out[1]).toBe(0);
    stream.synchronize();
    expect(out[1]).toBe(7);
    expect(out[4095]).toBe(4095 * 7);
  });

  it('deviceSpan bounds copies by a block of an allocator', () => {
    const cuda = fakeCuda();
    const allocator = cachingDeviceAllocator(cuda);
    const address = allocator.allocate(1000)!;
    expect(deviceSpan(allocator, address)).toEqual({ address, size: 1024 });
    expect(() => deviceSpan(allocator, address + 512)).toThrow(InvalidArgumentError);
    allocator.copyFromHost(address, new Uint8Array(1024).fill(5));
    expect(() => allocator.copyFromHost(address, new Uint8Array(1025))).toThrow(
      InvalidArgumentError,
    );
    const other = allocator.allocate(1000)!;
    allocator.copyWithin(other, address, 1024);
    const out = new Uint8Array(1024);
    allocator.copyToHost(other, out);
    expect(out.every((x) => x === 5)).toBe(true);
    allocator.fill(other, 0);
    allocator.copyToHost(other, out);
    expect(out.every((x) => x === 0)).toBe(true);
  });
});
