import type { Invariant } from './options';

/** Thrown by the suite when an allocator breaks one of the invariants; `invariant` says which. */
export class ConformanceError extends Error {
  readonly invariant: Invariant;
  /** What broke, without the replay information. */
  readonly detail: string;

  constructor(invariant: Invariant, detail: string, replay?: string) {
    super(`[${invariant}] ${detail}${replay ? `\n\n${replay}` : ''}`);
    this.name = 'ConformanceError';
    this.invariant = invariant;
    this.detail = detail;
  }
}

export function fail(invariant: Invariant, detail: string): never {
  throw new ConformanceError(invariant, detail);
}

export function hex(address: number): string {
  return Number.isFinite(address) && address >= 0 ? `0x${address.toString(16)}` : String(address);
}
