import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fakeCuda, GiB, MiB } from '../test/fake-cuda';
import { deviceSource } from './device-source';
import { cudaStatus, devices, isAvailable } from './devices';

const sysfs = mkdtempSync(join(tmpdir(), 'allot-cuda-pci-'));
afterAll(() => rmSync(sysfs, { recursive: true, force: true }));

describe('isAvailable, devices, cudaStatus (fake CUDA)', () => {
  it('describes every device: name, memory, PCI bus id, NUMA node, compute capability', () => {
    const cuda = fakeCuda({ devices: 2, capacity: 2 * GiB });
    mkdirSync(join(sysfs, '0000:3b:00.0'));
    writeFileSync(join(sysfs, '0000:3b:00.0', 'numa_node'), '1\n');
    mkdirSync(join(sysfs, '0000:3c:00.0'));
    writeFileSync(join(sysfs, '0000:3c:00.0', 'numa_node'), '-1\n');
    const held = deviceSource({ ...cuda, device: 1 }).acquire(4 * MiB);
    expect(held).not.toBeNull();
    expect(isAvailable(cuda)).toBe(true);
    expect(devices({ ...cuda, pciDevicesPath: sysfs })).toEqual([
      {
        index: 0,
        name: 'Fake CUDA Device 0',
        totalMemory: 2 * GiB,
        freeMemory: 2 * GiB,
        pciBusId: '0000:3b:00.0',
        numaNode: 1,
        computeCapability: { major: 9, minor: 0 },
      },
      {
        index: 1,
        name: 'Fake CUDA Device 1',
        totalMemory: 2 * GiB,
        freeMemory: 2 * GiB - 4 * MiB,
        pciBusId: '0000:3c:00.0',
        numaNode: null, // the system reports -1
        computeCapability: { major: 9, minor: 0 },
      },
    ]);
  });

  it('reports a NUMA node of null when sysfs has no entry', () => {
    const [device] = devices({ ...fakeCuda(), pciDevicesPath: join(sysfs, 'missing') });
    expect(device?.numaNode).toBeNull();
  });

  it('cudaStatus says where the runtime came from and its versions', () => {
    const cuda = fakeCuda({ runtimeVersion: 12080 });
    expect(cudaStatus(cuda)).toEqual({
      available: true,
      deviceCount: 1,
      runtimePath: cuda.runtimePath,
      runtimeVersion: 12080,
      driverVersion: 13000,
    });
  });
});
