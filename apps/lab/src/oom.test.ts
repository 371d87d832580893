/**
 * The recorded out-of-memory error of a public recording (`../shared/traces/public/`, read where it
 * lies): what was asked, what the driver had free, and the wall PyTorch hit. Skips, with a message,
 * when the folder is absent.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { findTracesDir } from '@allot/workloads/node';
import { describe, expect, it } from 'vitest';
import { lab } from './lab';
import { Capture } from './test-capture';

const file = (() => {
  const traces = findTracesDir();
  const path =
    traces === null ? null : join(traces, 'public', 'code_location-memory_snapshot.pickle');
  return path !== null && existsSync(path) ? path : null;
})();

if (file === null) console.warn('oom: ../shared/traces/public not found, skipping');

async function replay(...argv: string[]) {
  const stdout = new Capture();
  const status = await lab(
    [
      'replay',
      file!,
      '--device',
      'cuda:1',
      '--allocators',
      'caching',
      '--no-report',
      '--quiet',
      ...argv,
    ],
    { stdout, stderr: new Capture() },
  );
  return { status, stdout: stdout.text };
}

describe.skipIf(file === null)('a recorded out-of-memory error', () => {
  it('is read with its request, device_free, PyTorch’s figures and the wall', async () => {
    const { status, stdout } = await replay('--json');
    // The defaults row (not the recorded settings) fails at the wall: exit status 1.
    expect(status).toBe(1);
    const oom = JSON.parse(stdout).workloads[0].torch.oom;
    expect(oom.recorded).toMatchObject({
      event: 421,
      sizeBytes: 5_308_694_528,
      deviceFreeBytes: 95_682_560,
      stream: 0,
    });
    // What PyTorch had mapped then (the segments at the end, less the maps after the entry), plus
    // what the driver had free.
    expect(oom.recorded.reservedBytes).toBe(84_202_749_952);
    expect(oom.capacityBytes).toBe(84_298_432_512);
    expect(oom.capacitySource).toBe('oom');
    expect(oom.at).toMatch(/models\.py:\d+/);
  });

  it('is reproduced at the wall, explained, and no setting avoids it', async () => {
    const json = JSON.parse((await replay('--json')).stdout);
    const workload = json.workloads[0];
    const oom = workload.torch.oom;
    // The recorded settings replayed at the wall unmap cached pages six times (entries 413-418),
    // as PyTorch did, and fail at the recorded request.
    expect(oom.reproduced).toEqual({ event: 421, sizeBytes: 5_308_694_528 });
    expect(workload.torch.fidelity.error).toBe(0);
    expect(workload.torch.fidelity.segments).toMatchObject({ recorded: 46, matched: 46 });
    // The model's pool then holds what PyTorch had reserved, to the byte.
    expect(oom.state.reservedBytes).toBe(84_202_749_952);
    expect(oom.freeInCacheBytes).toBe(oom.state.freeInCacheBytes);
    expect(oom.largestFreeBlockBytes).toBeLessThan(5_308_694_528);
    expect(oom.state.holders[0].frame).toMatch(/models\.py:\d+/);
    // 78.3 GiB live plus a 4.94 GiB request cannot fit under 78.5 GiB: no setting avoids it.
    expect(oom.avoidedBy).toEqual([]);
    expect(oom.needs.leastBytes).toBeGreaterThan(oom.capacityBytes);
    expect(oom.needs.bestBytes).toBeGreaterThanOrEqual(oom.needs.leastBytes);
  });

  it('says it in the terminal, and takes the wall from --memory when given', async () => {
    const { stdout } = await replay();
    expect(stdout).toMatch(
      /out of memory recorded at entry 421: a 4\.94 GiB request \("Tried to allocate 4\.95 GiB" in PyTorch's error: the segment it asked the driver for\) on stream 0, 91\.3 MiB free on the device;.*the wall: 78\.5 GiB \(reserved \+ device_free\)/,
    );
    const stated = JSON.parse((await replay('--json', '--memory', '80GiB')).stdout);
    expect(stated.workloads[0].torch.oom.capacityBytes).toBe(80 * 2 ** 30);
    expect(stated.workloads[0].torch.oom.capacitySource).toBe('--memory');
  });
});
