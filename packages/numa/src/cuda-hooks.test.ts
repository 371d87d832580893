import { describe, expect, it } from 'vitest';
import { cudaHooksFromModule, loadCudaHooks } from './cuda-hooks';

describe('CUDA hooks', () => {
  it('load without a GPU: null, never a throw', async () => {
    const hooks = await loadCudaHooks();
    // No GPU in the default test run; where one exists, the hooks must be complete.
    if (hooks !== null) expect(typeof hooks.hostRegister).toBe('function');
  });

  it('adapt @allot/cuda: registerHostMemory, isAvailable, devices', () => {
    const calls: string[] = [];
    const module = {
      isAvailable: () => true,
      registerHostMemory: (memory: { address: number; size: number }) => {
        calls.push(`register ${memory.address} ${memory.size}`);
        return { unregister: () => calls.push(`unregister ${memory.address}`) };
      },
      devices: () => [{ index: 0, pciBusId: '0000:3b:00.0' }],
    };
    const hooks = cudaHooksFromModule(module)!;
    hooks.hostRegister(4096, 8192);
    hooks.hostUnregister(4096);
    expect(calls).toEqual(['register 4096 8192', 'unregister 4096']);
    expect(() => hooks.hostUnregister(4096)).toThrow(/registered through these hooks/);
    expect(hooks.pciBusId!(0)).toBe('0000:3b:00.0');
    expect(() => hooks.pciBusId!(1)).toThrow(/1 found/);
    expect(cudaHooksFromModule({ default: module })).not.toBeNull();
  });

  it('are null when CUDA is unusable or the module lacks registration', () => {
    expect(
      cudaHooksFromModule({ isAvailable: () => false, registerHostMemory: () => {} }),
    ).toBeNull();
    expect(cudaHooksFromModule({})).toBeNull();
    expect(cudaHooksFromModule(null)).toBeNull();
  });
});
