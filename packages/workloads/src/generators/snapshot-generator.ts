/**
 * PyTorch memory snapshots of any size, as `torch.cuda.memory._dump_snapshot()` writes them: the
 * pickle CPython makes of the snapshot (protocol 4, framed), byte for byte, streamed in chunks so
 * that a file of gigabytes never sits in memory. For testing readers at the sizes users bring.
 *
 * Two modes:
 * - **synthetic** (the default): a seeded event stream of a simple model of PyTorch's caching
 *   allocator (caching-simulation.ts), any number of events, on one or more devices, with an end
 *   state (`segments`) consistent with the trace. It runs twice: once for the end state, which
 *   the file holds first, and once to write the trace.
 * - **base**: a real snapshot (as `unpickle` returns it) with stacks added to its entries,
 *   segments and blocks (base-snapshot.ts); the depth of the stacks sets the size.
 *
 * ```
 *  options ─► CachingSimulation ─► SnapshotEncoder ─► PickleWriter ─► chunks (Uint8Array)
 *             (or a base snapshot)  (PyTorch's layout)  (CPython's bytes)
 * ```
 *
 * Stacks (stack-lists.ts) are drawn from a seeded tree of code locations; `sharedFrames` sets how
 * many frames are PyTorch's cached frame dicts, referred to after their first use, and how many
 * are new dicts.
 */

import { ItemBatches, PickleWriter, type UnpickledValue } from '@allot/pickle';
import { Random } from '../random';
import { type BaseCounts, baseSnapshotChunks, flush } from './base-snapshot';
import { CachingSimulation, type EntrySink } from './caching-simulation';
import { checkInteger } from './check-options';
import { defaultAllocatorSettings, SnapshotEncoder } from './snapshot-encoder';

/** Options of {@link torchSnapshotChunks}. */
export interface TorchSnapshotOptions {
  /**
   * Trace entries over all devices (synthetic mode); the last step's entries stay together, so a
   * device may get a few more. @defaultValue 100_000
   */
  readonly events?: number;
  /**
   * About this many bytes of pickle instead: synthetic mode picks the number of events, base mode
   * the stack depth, from a measured sample. Overrides `events` and `depth`.
   */
  readonly targetBytes?: number;
  /** Python frames per stack; 0 records none (`frames` is then the empty list). @defaultValue 16 */
  readonly depth?: number;
  /**
   * Share of frames that are PyTorch's cached frame dicts (one object per code location, written
   * once and referred to after), in [0, 1]; the rest are new dicts each time. @defaultValue 1
   */
  readonly sharedFrames?: number;
  /** Whether file and function names are one object per text. @defaultValue true */
  readonly sharedStrings?: boolean;
  /** Devices of a synthetic snapshot, each with its own trace. @defaultValue 1 */
  readonly devices?: number;
  /** Seed of the events and stacks. @defaultValue 1 */
  readonly seed?: number;
  /** A snapshot read with `unpickle`: add stacks to it instead of making events up. */
  readonly base?: UnpickledValue;
  /** Bytes per chunk handed out (a chunk ends at a frame's end, so may be shorter). @defaultValue 1 MiB */
  readonly chunkBytes?: number;
}

/** What a generated snapshot holds. */
export interface TorchSnapshotSummary {
  readonly mode: 'synthetic' | 'base';
  /** Bytes of pickle written. */
  readonly bytes: number;
  /** Trace entries over all devices. */
  readonly events: number;
  readonly eventsPerDevice: readonly number[];
  /** Segments and blocks of the end state. */
  readonly segments: number;
  readonly blocks: number;
  readonly depth: number;
  readonly sharedFrames: number;
  readonly sharedStrings: boolean;
  readonly seed: number;
  /** Distinct code locations the stacks were drawn from. */
  readonly codeLocations: number;
}

interface Settings {
  readonly events: number;
  readonly depth: number;
  readonly sharedFrames: number;
  readonly sharedStrings: boolean;
  readonly devices: number;
  readonly seed: number;
  readonly base: UnpickledValue | undefined;
  readonly chunkBytes: number;
}

const MIN_CHUNK_BYTES = 4096;
/** Events of the rough sample that sizes a synthetic file. */
const FIRST_SAMPLE = 2000;
/** The second sample is this share of the events guessed, within these bounds (or all of them). */
const SAMPLE_SHARE = 1 / 20;
const MIN_SAMPLE = 20_000;
const MAX_SAMPLE = 200_000;
/** Depth of the sample that sizes a base file's stacks. */
const SAMPLE_DEPTH = 8;

function settingsOf(options: TorchSnapshotOptions): Settings {
  const {
    events = 100_000,
    depth = 16,
    sharedFrames = 1,
    sharedStrings = true,
    devices = 1,
    seed = 1,
    base,
    chunkBytes = 1 << 20,
  } = options;
  checkInteger('events', events, 0);
  checkInteger('depth', depth, 0);
  checkInteger('devices', devices, 1);
  checkInteger('chunkBytes', chunkBytes, MIN_CHUNK_BYTES);
  if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be a safe integer, got ${seed}`);
  if (!(sharedFrames >= 0 && sharedFrames <= 1)) {
    throw new RangeError(`sharedFrames must be in [0, 1], got ${sharedFrames}`);
  }
  if (options.targetBytes !== undefined) checkInteger('targetBytes', options.targetBytes, 1);
  return { events, depth, sharedFrames, sharedStrings, devices, seed, base, chunkBytes };
}

/** Bytes of each synthetic snapshot's trace lists (the rest is its end state and settings). */
const traceBytes = new WeakMap<TorchSnapshotSummary, number>();

/** The summary of the snapshot `settings` make, by making it and counting. */
function measure(settings: Settings): TorchSnapshotSummary {
  const chunks = chunksOf(settings);
  let result = chunks.next();
  while (!result.done) result = chunks.next();
  return result.value;
}

/** `settings` with the events (synthetic) or the depth (base) that come nearest `target` bytes. */
function sized(settings: Settings, target: number): Settings {
  if (settings.base !== undefined) {
    const flat = measure({ ...settings, depth: 0 }).bytes;
    const perLevel = (measure({ ...settings, depth: SAMPLE_DEPTH }).bytes - flat) / SAMPLE_DEPTH;
    return { ...settings, depth: Math.max(0, Math.round((target - flat) / perLevel)) };
  }
  // A rough guess from a small sample, then a sample of a few per cent of it (all of it for a
  // small file), whose cost per event leaves out the end state: that part does not grow.
  const rough = measure({ ...settings, events: FIRST_SAMPLE });
  const guess = (target * FIRST_SAMPLE) / rough.bytes;
  const floor = Math.min(guess, MIN_SAMPLE);
  const events = Math.round(Math.min(MAX_SAMPLE, Math.max(floor, guess * SAMPLE_SHARE)));
  const sample = measure({ ...settings, events });
  const trace = traceBytes.get(sample)!;
  const perEvent = trace / sample.events;
  const fixed = sample.bytes - trace;
  return { ...settings, events: Math.max(1, Math.round((target - fixed) / perEvent)) };
}

/**
 * The snapshot's bytes, chunk by chunk; the generator's return value is its summary. A chunk is a
 * view of a buffer the next chunk reuses: write or copy it before asking for the next.
 *
 * @example
 * ```ts
 * const chunks = torchSnapshotChunks({ events: 1_000_000, depth: 32, sharedFrames: 0.5 });
 * for (let r = chunks.next(); !r.done; r = chunks.next()) fs.writeSync(fd, r.value);
 * ```
 */
export function torchSnapshotChunks(
  options: TorchSnapshotOptions = {},
): Generator<Uint8Array, TorchSnapshotSummary, void> {
  const settings = settingsOf(options);
  if (options.targetBytes === undefined) return chunksOf(settings);
  const target = options.targetBytes;
  // Sizing runs the generator on samples: only when the first chunk is asked for.
  return (function* () {
    return yield* chunksOf(sized(settings, target));
  })();
}

/** Writes the whole snapshot to `sink`, chunk by chunk (see {@link torchSnapshotChunks}). */
export function writeTorchSnapshot(
  options: TorchSnapshotOptions,
  sink: (chunk: Uint8Array) => void,
): TorchSnapshotSummary {
  const chunks = torchSnapshotChunks(options);
  let result = chunks.next();
  while (!result.done) {
    sink(result.value);
    result = chunks.next();
  }
  return result.value;
}

function* chunksOf(settings: Settings): Generator<Uint8Array, TorchSnapshotSummary, void> {
  const writer = new PickleWriter(settings.chunkBytes + (settings.chunkBytes >> 2));
  const root = new Random(settings.seed);
  const stackSeed = root.nextUint32();
  const encoder = new SnapshotEncoder(writer, {
    depth: settings.depth,
    sharedFrames: settings.sharedFrames,
    sharedStrings: settings.sharedStrings,
    seed: stackSeed,
  });
  const counts: BaseCounts & { traceBytes?: number } =
    settings.base === undefined
      ? yield* syntheticChunks(settings, root, encoder)
      : yield* baseSnapshotChunks(settings.base, encoder, settings.depth, settings.chunkBytes);
  const summary: TorchSnapshotSummary = {
    mode: settings.base === undefined ? 'synthetic' : 'base',
    bytes: writer.bytesWritten,
    events: counts.eventsPerDevice.reduce((sum, n) => sum + n, 0),
    eventsPerDevice: counts.eventsPerDevice,
    segments: counts.segments,
    blocks: counts.blocks,
    depth: settings.depth,
    sharedFrames: settings.sharedFrames,
    sharedStrings: settings.sharedStrings,
    seed: settings.seed,
    codeLocations: settings.depth === 0 ? 0 : encoder.stacks.locationCount,
  };
  if (counts.traceBytes !== undefined) traceBytes.set(summary, counts.traceBytes);
  return summary;
}

const NO_ENTRIES: EntrySink = { entry() {} };

function* syntheticChunks(
  settings: Settings,
  root: Random,
  encoder: SnapshotEncoder,
): Generator<Uint8Array, BaseCounts & { traceBytes: number }> {
  const { devices, chunkBytes } = settings;
  const { writer, strings } = encoder;
  const seeds = Array.from({ length: devices }, () => root.nextUint32());
  const targets = seeds.map(
    (_, d) => Math.floor(settings.events / devices) + (d < settings.events % devices ? 1 : 0),
  );
  // First run: the end state, which the file holds before the trace.
  const ends = seeds.map((seed, device) => {
    const simulation = new CachingSimulation(seed, device);
    while (simulation.entries < targets[device]!) simulation.step(NO_ENTRIES);
    return { entries: simulation.entries, segments: simulation.heldSegments() };
  });
  const segmentCount = ends.reduce((sum, end) => sum + end.segments.length, 0);

  writer.start();
  writer.emptyDict();
  writer.mark();
  strings.fresh('segments');
  writer.emptyList();
  const segments = new ItemBatches(writer, segmentCount, false);
  let blocks = 0;
  for (let device = 0; device < devices; device++) {
    for (const segment of ends[device]!.segments) {
      segments.before();
      blocks += segment.blocks.length;
      encoder.segment({
        device,
        address: segment.address,
        size: segment.size,
        small: segment.small,
        stack: segment.allocEntry,
        blocks: segment.blocks.map((b) => ({ ...b, stack: b.allocEntry })),
      });
      segments.after();
      if (writer.readyBytes >= chunkBytes) yield* flush(writer);
    }
  }

  // Second run: the same events again, written as they come.
  const traceStart = writer.bytesWritten;
  strings.fresh('device_traces');
  writer.emptyList();
  const traces = new ItemBatches(writer, devices, false);
  for (let device = 0; device < devices; device++) {
    traces.before();
    writer.emptyList();
    const sink = encoder.traceSink(device, new ItemBatches(writer, ends[device]!.entries, false));
    const simulation = new CachingSimulation(seeds[device]!, device);
    while (simulation.entries < targets[device]!) {
      simulation.step(sink);
      if (writer.readyBytes >= chunkBytes) yield* flush(writer);
    }
    traces.after();
  }

  const traceEnd = writer.bytesWritten;
  strings.fresh('allocator_settings');
  encoder.value(defaultAllocatorSettings(), 'allocator_settings');
  strings.fresh('external_annotations');
  encoder.value([], 'external_annotations');
  writer.setitems(false);
  writer.finish();
  yield* flush(writer);
  return {
    eventsPerDevice: ends.map((end) => end.entries),
    segments: segmentCount,
    blocks,
    traceBytes: traceEnd - traceStart,
  };
}
