import { readFileSync } from 'node:fs';
import {
  EventKind,
  parseTorchSnapshot,
  type Trace,
  TraceBuilder,
  unpickle,
} from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { SCORES_BLOCK, SCORES_FRAMES, snapshotWithFrames } from '../../test/snapshot-with-frames';
import { peakState, torchSnapshotOf, writeExports } from '../exports';
import { identicalRows, reportData } from '../report/page';
import { type LabResults, runWorkloads } from '../run';
import { builtInWorkloads } from '../workloads';
import { explainWorkload, GRID_POINTS, sortedAsFarAsRead, splitReserved } from './explain';
import { findRow } from './registry';
import { tune } from './tune';

const MiB = 2 ** 20;

function fixture() {
  const [trace] = parseTorchSnapshot(snapshotWithFrames(), { name: 'frames.json' });
  return trace!;
}

function workload(withTuning: boolean) {
  const trace = fixture();
  const rows = [findRow('best-fit')!, findRow('caching')!, findRow('caching-tuned')!];
  const [result] = runWorkloads(
    [
      {
        id: 'frames',
        title: 'frames',
        description: 'a snapshot with frames',
        trace,
        recordedRow: 'caching',
        ...(withTuning ? { tuning: tune(trace) } : {}),
      },
    ],
    rows,
    null,
  );
  return { trace, result: result! };
}

describe('explainWorkload', () => {
  const { trace, result } = workload(true);
  const explain = result.explain!;

  it('puts every event on a time axis in seconds and PyTorch’s reserved line beside it', () => {
    expect(explain.gridEvents.length).toBeLessThanOrEqual(GRID_POINTS + 1);
    expect(explain.gridSeconds![0]).toBe(0);
    // Entries are 1 ms apart: the first event (alloc x) is entry 1, the last (free x) entry 16.
    expect(explain.gridSeconds!.at(-1)).toBeCloseTo(0.015, 9);
    expect(Math.max(...explain.recordedReserved!)).toBe(66 * MiB);
    expect(explain.rowSeconds).toHaveLength(3);
  });

  it('draws a recording 0 s long on its events, not on a time axis with nothing on it', () => {
    const flat = fixture();
    const zero: Trace = { ...flat, time: new Float64Array(flat.length).fill(flat.time![0]!) };
    const rows = [findRow('caching')!];
    const [still] = runWorkloads(
      [{ id: 'still', title: 'still', description: 'no time passes', trace: zero }],
      rows,
      null,
      undefined,
      undefined,
      { skipTiming: true },
    );
    const explained = still!.explain!;
    expect(explained.gridSeconds).toBeUndefined();
    expect(explained.rowSeconds).toBeUndefined();
    expect(explained.peak.seconds).toBeUndefined();
    expect(explained.diagnosis.peak).toMatch(/^Live bytes peaked at .* at event \d/);
  });

  it('draws the known allocation with its frames, and finds the peak and its sizes', () => {
    const scores = explain.timeline.allocations.find((a) => a.id === SCORES_BLOCK)!;
    expect(scores.size).toBe(32 * MiB);
    expect(scores.frames![0]).toBe('attention_scores (model.py:88)');
    expect(scores.frames).toHaveLength(SCORES_FRAMES.length);
    expect(scores.allocSeconds).toBeCloseTo(0.002, 9);
    expect(scores.freeSeconds).toBeCloseTo(0.004, 9);
    expect(explain.peak.liveBytes).toBe(56 * MiB);
    expect(explain.peak.largest.map((a) => a.size)).toEqual([32 * MiB, 16 * MiB, 8 * MiB]);
    expect(explain.peak.seconds).toBeCloseTo(0.002, 9);
    expect(trace.frames!.get(SCORES_BLOCK)).toEqual(SCORES_FRAMES);
  });

  it('gives the page each frame text once, the allocations its indices', () => {
    const page = reportData({ workloads: [result], targets: [] } as unknown as LabResults);
    const timeline = page.workloads[0]!.explain!.timeline;
    expect(new Set(timeline.frameTexts).size).toBe(timeline.frameTexts.length);
    for (const drawn of timeline.allocations) {
      const explained = explain.timeline.allocations.find((a) => a.id === drawn.id)!;
      expect(drawn.frames?.map((k) => timeline.frameTexts[k])).toEqual(explained.frames);
    }
    const scores = timeline.allocations.find((a) => a.id === SCORES_BLOCK)!;
    expect(timeline.frameTexts[scores.frames![0]!]).toBe('attention_scores (model.py:88)');
  });

  it('says in plain words where reserved memory went, what caused the peak, and what to do', () => {
    const d = explain.diagnosis;
    expect(d.row).toBe('caching');
    expect(d.liveBytes + d.fragmentedBytes + d.cachedBytes).toBe(d.reservedBytes);
    expect(d.split).toMatch(/free but fragmented/);
    expect(d.split).toMatch(/cached and reusable/);
    expect(d.peak).toMatch(
      /Live bytes peaked at 56\.0 MiB at 0\.002 s \(event \d+\), when a 32\.0 MiB/,
    );
    expect(d.peak).toMatch(/PyTorch's reserved bytes reached their peak of 66\.0 MiB/);
    expect(d.advice).toMatch(/PYTORCH_CUDA_ALLOC_CONF/);
    expect(d.advice).toMatch(/assumed: state yours with --memory/);
    expect(d.action.length).toBeGreaterThan(10);
  });

  it('marks rows with identical results', () => {
    // caching-tuned recommends expandable segments here: not the figures of caching.
    expect(identicalRows(result)).toEqual([null, null, null]);
    const [same] = runWorkloads(
      [{ id: 'frames', title: 'frames', description: 'd', trace: fixture() }],
      [findRow('first-fit')!, findRow('best-fit')!],
      null,
    );
    expect(identicalRows(same!)).toEqual([null, 'first-fit']);
    // What the page draws them from (the browser test checks the page itself).
    const page = reportData({
      tool: 'allot-lab',
      version: 1,
      command: 'allot-lab replay frames.json',
      createdAt: '2025-01-01T00:00:00.000Z',
      node: 'v20',
      platform: 'test',
      seed: null,
      capacity: null,
      workloads: [result, same!],
      targets: [],
      failures: 0,
    });
    expect(page.workloads[1]!.rows.map((row) => row.sameAs)).toEqual([null, 'first-fit']);
    const explained = page.workloads[0]!.explain!;
    expect(explained.diagnosis).toEqual(explain.diagnosis);
    expect(explained.peak.largest[0]!.frame).toBe('attention_scores (model.py:88)');
    expect(explained.gridSeconds).toHaveLength(explain.gridEvents.length);
    expect(explained.timeline.allocations.length).toBeGreaterThan(0);
  });
});

/** Live bytes after each event. */
function liveAfterEach(trace: Trace): number[] {
  const live: number[] = [];
  let bytes = 0;
  for (let i = 0; i < trace.length; i++) {
    bytes += trace.kind[i] === EventKind.Alloc ? trace.size[i]! : -trace.size[i]!;
    live.push(bytes);
  }
  return live;
}

/** 6,000 events: a small block held throughout, and every 50 events a 1 MiB burst of 3 events. */
function bursts(): Trace {
  const builder = new TraceBuilder('bursts');
  builder.alloc(1024);
  let events = 1;
  let burst = 0;
  while (events < 6000) {
    if (events % 50 === 7) {
      builder.free(builder.alloc(MiB * (1 + (burst++ % 5))));
      events += 2;
    } else {
      builder.free(builder.alloc(512));
      events += 2;
    }
  }
  return builder.build('bursts');
}

describe('the live and recorded lines', () => {
  it('hold at each point the peak of the interval that begins there, where the chart draws it', () => {
    const built = bursts();
    // PyTorch's reserved bytes: a step up for the burst's event only.
    const recorded = new Float64Array(built.length);
    const live = liveAfterEach(built);
    for (let i = 0; i < built.length; i++) recorded[i] = 4 * MiB + live[i]!;
    const trace = { ...built, recordedReserved: recorded };
    const explain = explainWorkload(trace, []);
    const grid = explain.gridEvents;
    expect(grid.length).toBeGreaterThan(100);
    expect(grid.length).toBeLessThan(trace.length / 4); // intervals span several events
    // The steps of the chart hold each point's value from its x to the next point's.
    for (let j = 0; j < grid.length; j++) {
      const end = j + 1 < grid.length ? grid[j + 1]! : trace.length;
      const peak = Math.max(...live.slice(grid[j]!, end));
      expect(explain.liveBytes[j], `interval ${j}`).toBe(peak);
      expect(explain.recordedReserved![j], `interval ${j}`).toBe(4 * MiB + peak);
    }
  });
});

describe('splitReserved', () => {
  it('counts free bytes in segments with live blocks as fragmented, free segments as cached', () => {
    const split = splitReserved({
      segments: [
        { address: 0, size: 100, runs: [0, 40, 1, 40, 60, 0] },
        { address: 100, size: 50, runs: [0, 50, 0] },
      ],
      totalBytes: 150,
      liveBytes: 40,
      freeBytes: 110,
      blocks: 3,
    });
    expect(split).toEqual({ reserved: 150, live: 40, fragmented: 60, cached: 50 });
  });
});

describe('exports', () => {
  it('writes a memory_viz pickle our reader reads back, at the peak, and a VMA dump', () => {
    const trace = fixture();
    const peak = peakState(trace, findRow('caching')!, null);
    const snapshot = torchSnapshotOf(peak);
    const live = snapshot.segments.flatMap((s) => s.blocks).filter((b) => b.state !== 'inactive');
    expect(live.map((b) => b.requested_size).sort((a, b) => a - b)).toEqual([
      8 * MiB,
      16 * MiB,
      32 * MiB,
    ]);
    const alloc = snapshot.device_traces[0]!.find(
      (e) => e.action === 'alloc' && e.size === 32 * MiB,
    )!;
    expect(alloc.frames).toEqual(SCORES_FRAMES);
    // memory_viz places each block after the one before: blocks tile their segment.
    for (const segment of snapshot.segments) {
      let address = segment.address;
      for (const block of segment.blocks) {
        expect(block.address).toBe(address);
        address += block.size;
      }
      expect(address).toBe(segment.address + segment.total_size);
    }
    expect(live.find((b) => b.requested_size === 32 * MiB)!.frames).toEqual(SCORES_FRAMES);
    // memory_viz's segment view finds a segment for every block of the trace.
    for (const entry of snapshot.device_traces[0]!) {
      const owner = snapshot.segments.find(
        (s) => entry.addr! >= s.address && entry.addr! < s.address + s.total_size,
      );
      expect(owner).toBeDefined();
    }

    const dir = `${process.env.TMPDIR ?? '/tmp'}/allot-lab-exports-${process.pid}`;
    const paths = writeExports(
      [{ id: 'frames.json', trace, rows: [findRow('caching')!] }],
      ['memory-viz', 'vma'],
      dir,
      null,
    );
    expect(paths.map((p) => p.slice(dir.length))).toEqual([
      '/exports/frames.json.caching.pickle',
      '/exports/frames.json.caching.vma.json',
    ]);
    const [back] = parseTorchSnapshot(unpickle(readFileSync(paths[0]!)), { name: 'back' });
    // Every segment came from the window's segment events: none held before it.
    expect(back!.meta.torchReservedAtStartBytes).toBe(0);
    const vma = JSON.parse(readFileSync(paths[1]!, 'utf8'));
    expect(vma.Total.AllocationCount).toBe(3);
  });
});

describe('the action', () => {
  it('speaks of batches and activation checkpointing for a model, not for a server’s churn', () => {
    const larson = builtInWorkloads(1, true).find((spec) => spec.id === 'larson')!;
    const [result] = runWorkloads(
      [{ id: 'larson', title: 'larson', description: 'churn', trace: larson.build() }],
      [findRow('caching')!],
      null,
    );
    const action = result!.explain!.diagnosis.action;
    expect(action).toMatch(/mostly live data/);
    expect(action).not.toMatch(/batch|checkpointing|KV cache/);
  });
});

describe('sortedAsFarAsRead', () => {
  it('reads as a full sort would, ties and reads past the first part included', () => {
    let x = 31;
    const next = (n: number) => {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      return Math.floor((x / 2 ** 31) * n);
    };
    for (let round = 0; round < 200; round++) {
      const items = Array.from({ length: next(300) }, (_, block) => ({ key: next(21), block }));
      const need = 1 + next(40);
      const compare = (a: (typeof items)[number], b: (typeof items)[number]) =>
        b.key - a.key || a.block - b.block;
      const full = [...items].sort(compare);
      const read = sortedAsFarAsRead(items, (item) => item.key, compare, need);
      for (let k = 0; k <= items.length; k++) expect(read(k)).toBe(full[k]);
    }
  });
});
