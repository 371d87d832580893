import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { validate } from '../test/support/json-schema';
import { tinyFirstFit } from '../test/support/tiny-first-fit';
import { TRACES_DIR, tracePath } from '../test/support/traces';
import { fragmentation } from './fragmentation';
import { toVmaDump, type VmaDump, vmaDumpToLayout } from './vma-dump';
import { withStats } from './with-stats';

function schema(): Record<string, unknown> | undefined {
  const path = tracePath('vma-json-dump/GpuMemDump.schema.json');
  return path ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>) : undefined;
}

describe('VMA JSON dump export', () => {
  it('validates against GpuMemDump.schema.json and keeps the figures', (context) => {
    const s = schema();
    if (!s) {
      context.skip(`${join(TRACES_DIR, 'vma-json-dump')} is absent: skipping the schema check`);
      return;
    }
    const stats = withStats(tinyFirstFit({ capacity: 1 << 16 }));
    const blocks = Array.from({ length: 8 }, (_, i) => stats.allocate(512 * (i + 1))!);
    stats.free(blocks[1]!);
    stats.free(blocks[5]!);
    const layout = stats.layout!();
    const dump = toVmaDump(layout, { gpu: 'test GPU' });
    expect(validate(dump, s)).toEqual([]);
    expect(validate(JSON.parse(JSON.stringify(dump)), s)).toEqual([]);
    expect(dump.General).toEqual({ API: 'Vulkan', GPU: 'test GPU' });
    expect(dump.Total).toMatchObject({ BlockCount: 1, BlockBytes: 1 << 16, AllocationCount: 6 });
    const block = dump.DefaultPools!['Type 0']!.Blocks!['0']!;
    expect(block.Suballocations!.map((x) => x.Type)).toEqual([
      'UNKNOWN',
      'FREE',
      'UNKNOWN',
      'UNKNOWN',
      'UNKNOWN',
      'FREE',
      'UNKNOWN',
      'UNKNOWN',
      'FREE',
    ]);
    // Reading the export back gives the same fragmentation figures.
    const back = fragmentation(vmaDumpToLayout(dump));
    const original = fragmentation(layout);
    expect(back.externalFragmentation).toBe(original.externalFragmentation);
    expect(back.freeBytes).toBe(original.freeBytes);
    expect(back.allocatedBytes).toBe(original.allocatedBytes);
  });

  it('puts named pools into CustomPools, still valid', (context) => {
    const s = schema();
    if (!s) {
      context.skip('GpuMemDump.schema.json is absent');
      return;
    }
    const dump = toVmaDump({
      segments: [
        { address: 0, size: 100, blocks: [{ address: 0, size: 100, free: true }] },
        {
          address: 1000,
          size: 50,
          pool: 'small',
          blocks: [{ address: 1000, size: 50, free: false }],
        },
      ],
    });
    expect(validate(dump, s)).toEqual([]);
    expect(dump.CustomPools!['Type 0']![0]!.Name).toBe('small');
    expect(dump.Total.AllocationSizeMax).toBe(50);
  });

  it('validates the sample itself (the checker is not vacuous)', (context) => {
    const s = schema();
    const path = tracePath('vma-json-dump/Sample.json');
    if (!s || !path) {
      context.skip('VMA fixtures are absent');
      return;
    }
    const sample = JSON.parse(readFileSync(path, 'utf8')) as VmaDump;
    expect(validate(sample, s)).toEqual([]);
    expect(validate({ General: { API: 'Metal', GPU: 'x' } }, s).sort()).toEqual([
      '$.General.API: not in enum',
      '$: missing required MemoryInfo',
      '$: missing required Total',
    ]);
  });
});
