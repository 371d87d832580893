/**
 * Test sources: a host source that logs every acquire, release and grow, and an optional stream
 * side whose events complete only when the test says so.
 */
import { type HostRegion, type HostSourceOptions, hostSource } from '@allot/core';
import type { StreamEvents } from '../stream-source';

export const MiB = 1024 * 1024;
export const KiB = 1024;

function mib(bytes: number): string {
  return bytes % MiB === 0 ? `${bytes / MiB} MiB` : `${bytes} B`;
}

export interface RecordingSource {
  readonly kind: string;
  readonly granularity: number;
  readonly hostAccessible: boolean;
  acquire(size: number): HostRegion | null;
  release(region: HostRegion): void;
  grow?(region: HostRegion, newSize: number): boolean;
  view(address: number, size: number): Uint8Array;
  reservedBytes(): number;
  /** `acquire 2 MiB`, `acquire 40 MiB → null`, `release 20 MiB`, `grow 20 MiB → 40 MiB`, and notes. */
  readonly log: string[];
  /** Sizes of successful acquisitions, in order. */
  readonly acquired: number[];
}

export function recordingSource(options: HostSourceOptions = {}): RecordingSource {
  const inner = hostSource(options);
  const log: string[] = [];
  const acquired: number[] = [];
  const source: RecordingSource = {
    kind: inner.kind,
    granularity: inner.granularity,
    hostAccessible: true,
    log,
    acquired,
    acquire(size) {
      const region = inner.acquire(size);
      log.push(`acquire ${mib(size)}${region === null ? ' → null' : ''}`);
      if (region !== null) acquired.push(region.size);
      return region;
    },
    release(region) {
      log.push(`release ${mib(region.size)}`);
      inner.release(region);
    },
    view: (address, size) => inner.view(address, size),
    reservedBytes: () => inner.reservedBytes(),
  };
  const grow = inner.grow;
  if (grow !== undefined) {
    source.grow = (region, newSize) => {
      const before = region.size;
      const ok = grow(region, newSize);
      log.push(`grow ${mib(before)} → ${mib(newSize)}${ok ? '' : ' refused'}`);
      return ok;
    };
  }
  return source;
}

interface TestEvent {
  readonly stream: number;
  readonly serial: number;
}

/** Stream hooks whose events complete when `complete(stream)` is called. */
export function manualStreams(): StreamEvents<TestEvent> & {
  complete(stream: number): void;
  readonly destroyed: number[];
} {
  const recorded = new Map<number, number>();
  const completed = new Map<number, number>();
  const destroyed: number[] = [];
  return {
    destroyed,
    recordEvent(stream) {
      const serial = (recorded.get(stream) ?? 0) + 1;
      recorded.set(stream, serial);
      return { stream, serial };
    },
    queryEvent: (event) => (completed.get(event.stream) ?? 0) >= event.serial,
    synchronizeEvent(event) {
      if ((completed.get(event.stream) ?? 0) < event.serial)
        completed.set(event.stream, event.serial);
    },
    destroyEvent: (event) => {
      destroyed.push(event.stream);
    },
    complete(stream) {
      completed.set(stream, recorded.get(stream) ?? 0);
    },
  };
}
