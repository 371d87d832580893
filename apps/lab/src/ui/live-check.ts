/**
 * The live page's data checked before any of it is drawn: a state whose shape is not
 * live-data.ts's (another program on the port, a server of another version, a damaged message)
 * is refused whole with a `LiveStateError` that names the first field amiss, so the page keeps
 * what it showed rather than drawing half of it. Only what the page reads is checked; more is
 * let through.
 */
import type { LiveState } from './live-data';

/** A state the page cannot draw; `path` names the field (`ranks[2].trend[0].reservedBytes`). */
export class LiveStateError extends Error {
  override readonly name = 'LiveStateError';
  constructor(
    readonly path: string,
    what: string,
  ) {
    super(`${path === '' ? 'the state' : path} ${what}`);
  }
}

type Fields = { readonly [key: string]: unknown };

/** The path of field `key` under `path`. */
function field(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

function object(value: unknown, path: string): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new LiveStateError(path, 'is not an object');
  return value as Fields;
}

function list(value: unknown, path: string): readonly unknown[] {
  if (!Array.isArray(value)) throw new LiveStateError(path, 'is not a list');
  return value;
}

/** Checks that each of `keys` of `fields` is a finite number (or null, where `nullable`). */
function numbers(fields: Fields, path: string, keys: readonly string[], nullable = false): void {
  for (const key of keys) {
    const value = fields[key];
    if (nullable && value === null) continue;
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw new LiveStateError(field(path, key), `is not a number${nullable ? ' or null' : ''}`);
  }
}

function strings(fields: Fields, path: string, keys: readonly string[]): void {
  for (const key of keys) {
    if (typeof fields[key] !== 'string') throw new LiveStateError(field(path, key), 'is not text');
  }
}

function rank(value: unknown, path: string): void {
  const fields = object(value, path);
  numbers(fields, path, ['rank', 'dumps', 'recordedPeakReservedBytes', 'peakReservedBytes']);
  numbers(fields, path, ['step', 'advisedPeakReservedBytes'], true);
  strings(fields, path, ['file']);
  const stats = object(fields.stats, `${path}.stats`);
  for (const family of ['reserved_bytes', 'allocated_bytes', 'inactive_split_bytes']) {
    numbers(object(stats[family], `${path}.stats.${family}`), `${path}.stats.${family}`, ['all']);
  }
  list(fields.gaps, `${path}.gaps`).forEach((gap, i) => {
    if (typeof gap !== 'string') throw new LiveStateError(`${path}.gaps[${i}]`, 'is not text');
  });
  list(fields.trend, `${path}.trend`).forEach((point, i) => {
    const at = `${path}.trend[${i}]`;
    const figures = object(point, at);
    numbers(figures, at, ['peakReservedBytes', 'reservedBytes', 'allocatedBytes']);
    numbers(figures, at, ['step', 'recordedPeakBytes', 'advisedPeakReservedBytes'], true);
    strings(figures, at, ['file']);
  });
  if (fields.diedAt !== null) object(fields.diedAt, `${path}.diedAt`);
}

function postMortem(value: unknown, path: string): void {
  const fields = object(value, path);
  numbers(fields, path, ['rank']);
  numbers(fields, path, ['step'], true);
  strings(fields, path, ['file']);
  list(fields.lines, `${path}.lines`).forEach((line, i) => {
    if (typeof line !== 'string') throw new LiveStateError(`${path}.lines[${i}]`, 'is not text');
  });
  const oom = object(fields.oom, `${path}.oom`);
  numbers(oom, `${path}.oom`, ['capacityBytes'], true);
  numbers(object(oom.recorded, `${path}.oom.recorded`), `${path}.oom.recorded`, [
    'sizeBytes',
    'stream',
    'reservedBytes',
    'allocatedBytes',
  ]);
  if (oom.state !== undefined) {
    list(object(oom.state, `${path}.oom.state`).holders, `${path}.oom.state.holders`);
  }
  if (oom.avoidedBy !== undefined) list(oom.avoidedBy, `${path}.oom.avoidedBy`);
}

/** `value` as the page's state, checked (see the module comment). @throws LiveStateError */
export function liveState(value: unknown): LiveState {
  const fields = object(value, '');
  strings(fields, '', ['folder', 'adviceText']);
  for (const [i, each] of list(fields.ranks, 'ranks').entries()) rank(each, `ranks[${i}]`);
  if (fields.advice !== null) {
    const advice = object(fields.advice, 'advice');
    numbers(object(advice.worst, 'advice.worst'), 'advice.worst', ['rank']);
  }
  for (const [i, each] of list(fields.ooms, 'ooms').entries()) postMortem(each, `ooms[${i}]`);
  for (const [i, each] of list(fields.skipped, 'skipped').entries())
    strings(object(each, `skipped[${i}]`), `skipped[${i}]`, ['file', 'message']);
  return value as LiveState;
}
