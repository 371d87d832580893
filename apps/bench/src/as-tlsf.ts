/**
 * AssemblyScript's runtime TLSF as a bench row: the strongest JS-reachable peer. The module is
 * compiled from the `assemblyscript` package when the bench runs (no binary is committed): two
 * exports that call the runtime's `heap.alloc` and `heap.free`, built with `--runtime minimal`
 * (whose allocator is `rt/tlsf.ts`) at `-O3`.
 *
 * - capacity: the instance imports a `WebAssembly.Memory` of exactly ⌈capacity / 64 KiB⌉ pages that
 *   cannot grow, so the figure includes TLSF's root, its 4-byte block headers and the module's
 *   static data, as it should; at most {@link AS_TLSF_MAX_CAPACITY} (wasm32);
 * - `allocate(size)`: `heap.alloc(size)`; when the memory cannot grow the runtime traps
 *   (`unreachable`), which becomes `null`. Alignment is the runtime's 16 bytes;
 * - `free(address)`: `heap.free(address)`;
 * - a fresh allocator is a fresh instance of the compiled module over a fresh memory.
 */
import type { BenchAllocator } from './bench-allocator';

/** Largest memory a wasm32 instance can have: 65,536 pages of 64 KiB, minus one page of headroom. */
export const AS_TLSF_MAX_CAPACITY = 2 ** 32 - 2 ** 16;
/** Bytes per wasm page. */
const PAGE = 2 ** 16;

/** The AssemblyScript source of the peer. */
export const AS_TLSF_SOURCE = `
export function alloc(size: usize): usize { return heap.alloc(size); }
export function free(ptr: usize): void { heap.free(ptr); }
`;

interface AscModule {
  compileString(
    sources: Record<string, string> | string,
    options?: Record<string, unknown>,
  ): Promise<{ binary: Uint8Array | null; error: Error | null; stderr: { toString(): string } }>;
}

/** The parts of the WebAssembly JS API used here (the shared tsconfig carries no DOM types). */
interface WasmModule {
  readonly brand?: 'WebAssembly.Module';
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => WasmModule;
  Memory: new (descriptor: { initial: number; maximum: number }) => object;
  Instance: new (module: WasmModule, imports: object) => { exports: object };
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

interface TlsfExports {
  alloc(size: number): number;
  free(pointer: number): void;
}

let compiled: Promise<WasmModule> | null = null;

/** Compiles the peer once per process. */
export function compileAsTlsf(asc: AscModule): Promise<WasmModule> {
  compiled ??= (async () => {
    const flags: Record<string, unknown> = {
      runtime: 'minimal',
      optimizeLevel: 3,
      shrinkLevel: 0,
      noAssert: true,
      importMemory: true,
      initialMemory: 1,
      use: ['abort='],
    };
    const result = await asc.compileString({ 'tlsf-peer.ts': AS_TLSF_SOURCE }, flags);
    if (result.error || !result.binary) {
      throw new Error(
        `assemblyscript failed to compile the TLSF peer: ${result.error?.message ?? ''} ${result.stderr.toString()}`,
      );
    }
    return new wasm.Module(result.binary);
  })();
  return compiled;
}

/** A bench allocator factory over instances of the compiled module. */
export function asTlsf(module: WasmModule): (capacity: number) => BenchAllocator {
  return (capacity: number) => {
    const pages = Math.ceil(Math.min(capacity, AS_TLSF_MAX_CAPACITY) / PAGE);
    const memory = new wasm.Memory({ initial: pages, maximum: pages });
    const instance = new wasm.Instance(module, { env: { memory } });
    const tlsf = instance.exports as unknown as TlsfExports;
    const alloc = tlsf.alloc;
    const release = tlsf.free;
    return {
      allocate(size: number): number | null {
        try {
          // wasm32 returns the pointer as a signed i32: read it back as the unsigned offset it is.
          return alloc(size) >>> 0;
        } catch {
          // The runtime traps when the memory cannot grow: that is exhaustion.
          return null;
        }
      },
      free(address: number): void {
        release(address);
      },
    };
  };
}
