import { inferenceServing } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { findRow } from '../analysis/registry';
import { checkTargets, countFailures, type LabResults, runWorkloads } from '../run';
import type { ReportData } from '../ui/report-data';
import { reportData } from './page';
import { reportParts } from './report-file';

function results(): LabResults {
  const workloads = runWorkloads(
    [
      {
        id: 'serve</script>',
        title: 'Serving <b>&</b>',
        description: 'a small trace',
        trace: inferenceServing({ requests: 8, seed: 1 }),
      },
    ],
    [findRow('best-fit')!, findRow('caching')!],
    null,
  );
  return {
    tool: 'allot-lab',
    version: 1,
    command: 'allot-lab test',
    createdAt: '2025-01-01T00:00:00.000Z',
    node: 'v20',
    platform: 'test',
    seed: 1,
    capacity: null,
    workloads,
    targets: checkTargets(workloads),
    failures: countFailures(workloads),
  };
}

/** The data block of a report page. */
function dataOf(html: string): ReportData {
  const block = /<script type="application\/json" id="lab-data">(.*?)<\/script>/s.exec(html);
  expect(block).not.toBeNull();
  return JSON.parse(block![1]!) as ReportData;
}

describe('the report file', () => {
  const run = results();
  const html = reportParts(run).join('');

  it('is one self-contained file: the client bundle and the styles inlined, no external resources', () => {
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('var labUi='); // the client modules and uPlot, one IIFE
    expect(html).toContain('.u-legend'); // uPlot's style
    expect(html).toContain('.split-legend'); // the report's
    expect(html).not.toMatch(/<script[^>]+src=/);
    expect(html).not.toMatch(/<link[^>]+href=/);
    expect(html).not.toMatch(/url\(\s*['"]?https?:/);
  });

  it('carries text only inside the data block, which stays parseable', () => {
    expect(html).not.toContain('<b>&</b>');
    expect(html.match(/<\/script>/g)).toHaveLength(2);
    const data = dataOf(html);
    expect(data).toEqual(JSON.parse(JSON.stringify(reportData(run))));
    expect(data.workloads[0]!.id).toBe('serve</script>');
    expect(data.workloads[0]!.title).toBe('Serving <b>&</b>');
    expect(data.workloads[0]!.rows.map((r) => r.allocator)).toEqual(['best-fit', 'caching']);
  });
});

describe('the page data', () => {
  it('gives the table as the terminal prints it and each row its figures', () => {
    const [workload] = reportData(results()).workloads;
    expect(workload!.table.header[0]).toBe('allocator');
    expect(workload!.table.rows.map((cells) => cells[0])).toEqual(['best-fit', 'caching']);
    const caching = workload!.rows[1]!;
    expect(caching).toMatchObject({ kind: 'pool', config: '', sameAs: null });
    expect(caching.segments!.acquired).toBeGreaterThan(0);
    expect(workload!.rows[0]!).toMatchObject({ kind: 'range', config: null, segments: null });
  });

  it('says each recorded OOM as the terminal does, and nothing without one', () => {
    const base = results();
    expect(reportData(base).workloads[0]!.ooms).toEqual([]);
    const workload = base.workloads[0]!;
    const oom = {
      recorded: {
        event: 7,
        sizeBytes: 2 ** 30,
        stream: 0,
        deviceFreeBytes: 2 ** 20,
        reservedBytes: 2 ** 32,
        allocatedBytes: 2 ** 31,
      },
      capacityBytes: 2 ** 32 + 2 ** 20,
      capacitySource: 'oom' as const,
      at: 'step <script> (train.py:9)',
    };
    const data = reportData({
      ...base,
      workloads: [{ ...workload, torch: { oom, recordedOoms: [oom] } }],
    });
    const [lines] = data.workloads[0]!.ooms;
    expect(lines![0]).toMatch(
      /^out of memory recorded at entry 7: a 1\.00 GiB request on stream 0/,
    );
    expect(lines).toContain('requested at step <script> (train.py:9)');
    expect(data.workloads[0]!.oomLayouts).toEqual([]);
  });
});
