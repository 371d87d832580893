import { inferenceServing } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { findRow } from '../analysis/registry';
import { checkTargets, countFailures, type LabResults, runWorkloads } from '../run';
import { renderReport } from './html';
import { pageData, renderReportWith } from './page';

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

describe('renderReport', () => {
  const html = renderReport(results());

  it('is one self-contained file: uPlot inlined, no external resources', () => {
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('uPlot'); // the IIFE build defines the global
    expect(html).not.toMatch(/<script[^>]+src=/);
    expect(html).not.toMatch(/<link[^>]+href=/);
    expect(html).not.toMatch(/url\(\s*['"]?https?:/);
  });

  it('escapes text and keeps the data block parseable', () => {
    expect(html).toContain('Serving &lt;b&gt;&amp;&lt;/b&gt;');
    const data = /<script type="application\/json" id="lab-data">(.*?)<\/script>/s.exec(html);
    expect(data).not.toBeNull();
    const parsed = JSON.parse(data![1]!);
    expect(parsed.workloads[0].id).toBe('serve</script>');
    expect(parsed.workloads[0].rows.map((r: { allocator: string }) => r.allocator)).toEqual([
      'best-fit',
      'caching',
    ]);
  });

  it('has a section with both charts and the layouts per workload', () => {
    expect(html).toContain('<section id="workload-0">');
    expect(html).toContain('class="chart chart-memory"');
    expect(html).toContain('class="chart chart-fragmentation"');
    expect(html).toContain('class="layouts"');
  });
});

describe('the out-of-memory section', () => {
  it('shows each recorded OOM as the terminal says it, escaped, and nothing without one', () => {
    const base = results();
    expect(renderReport(base)).not.toContain('Out of memory, as recorded');
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
    const html = renderReport({
      ...base,
      workloads: [{ ...workload, torch: { oom, recordedOoms: [oom] } }],
    });
    expect(html).toContain('Out of memory, as recorded');
    expect(html).toMatch(/out of memory recorded at entry 7: a 1\.00 GiB request on stream 0/);
    expect(html).toContain('requested at step &lt;script&gt; (train.py:9)');
  });
});

describe('renderReportWith', () => {
  it('takes uPlot from its caller, and leaves the header out on request', () => {
    const run = results();
    const html = renderReportWith(run, { script: '/*u*/', style: '/*s*/' }, { header: false });
    expect(html).toContain('<script>/*u*/</script>');
    expect(html).toContain('<style>/*s*/</style>');
    expect(html).not.toContain('<h1>');
    expect(html).not.toContain('allot-lab test');
    expect(html).toContain(JSON.stringify(pageData(run)).replaceAll('<', '\\u003c').slice(0, 60));
  });
});
