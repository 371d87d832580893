/**
 * What `allot-lab record` writes beside each snapshot (`NAME.json` beside `NAME.pickle`, see the
 * bootstrap's `allot_lab_record_files.py`) that the snapshot itself does not say, and that decides
 * where PyTorch's wall stood: the device's memory and the per-process memory fraction.
 *
 * ```
 *  sidecar ─► deviceTotalBytes                  ─► meta.deviceMemoryBytes (the card)
 *          ─► memoryFraction (PyTorch 2.9 on)    ─► meta.memoryFraction, when below 1
 *             else oom.limitBytes below the card ─► the fraction whose cap is that limit
 * ```
 *
 * A snapshot alone cannot tell a fraction from the card: its `oom` entry holds `device_free`, and
 * under `set_per_process_memory_fraction` a rank runs out with most of the device free.
 *
 * Browser-safe: the caller reads the file.
 */
import type { TraceMeta } from '@allot/workloads';

/** The largest sidecar read: one is a few kilobytes, and a large file of its name is something else. */
export const MAX_SIDECAR_BYTES = 1 << 20;

/** The sidecar's format, as the bootstrap writes it. */
export const SIDECAR_FORMAT = 'allot-lab-record';

/** The sidecar's name beside a snapshot's path (`rank0_step5.pickle` → `rank0_step5.json`). */
export function sidecarPath(snapshotPath: string): string | null {
  const match = /^(.*)\.(?:pickle|pkl)(?:\.gz)?$/.exec(snapshotPath);
  return match ? `${match[1]}.json` : null;
}

const positive = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0;

/**
 * The fraction PyTorch caps a pool of `limit` bytes with on a card of `memory` bytes: the smallest
 * double whose `floor(fraction × memory)` is `limit`, as `setMemoryFraction` computes the cap.
 */
export function fractionOfLimit(limit: number, memory: number): number {
  let fraction = limit / memory;
  for (let i = 0; i < 4 && Math.floor(fraction * memory) < limit; i++) {
    fraction += Number.EPSILON * fraction;
  }
  return fraction;
}

/**
 * The meta a sidecar adds to its snapshot's trace on `device`: `deviceMemoryBytes` and, where a
 * fraction below 1 was set, `memoryFraction`. Empty for a file that is not such a sidecar, is
 * damaged, or speaks of another device.
 */
export function sidecarMeta(text: string, device: unknown): TraceMeta {
  let sidecar: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null) return {};
    sidecar = parsed as Record<string, unknown>;
  } catch {
    return {};
  }
  if (sidecar.format !== SIDECAR_FORMAT) return {};
  if (typeof device === 'number' && typeof sidecar.device === 'number' && sidecar.device !== device)
    return {};
  const memory = sidecar.deviceTotalBytes;
  if (!positive(memory)) return {};
  const oom = sidecar.oom as Record<string, unknown> | null | undefined;
  const limit = typeof oom === 'object' && oom !== null ? oom.limitBytes : undefined;
  const stated = sidecar.memoryFraction;
  const fraction =
    positive(stated) && stated < 1
      ? stated
      : positive(limit) && limit < memory
        ? fractionOfLimit(limit, memory)
        : null;
  return fraction === null
    ? { deviceMemoryBytes: memory }
    : { deviceMemoryBytes: memory, memoryFraction: fraction };
}

/** `trace` with what its sidecar's `text` adds to its meta (see {@link sidecarMeta}). */
export function withSidecar<T extends { readonly meta: TraceMeta }>(trace: T, text: string): T {
  const meta = sidecarMeta(text, trace.meta.device);
  return Object.keys(meta).length === 0 ? trace : { ...trace, meta: { ...trace.meta, ...meta } };
}
