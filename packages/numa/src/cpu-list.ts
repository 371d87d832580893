/**
 * The kernel's list format for CPU and node sets (`Documentation/admin-guide/cputopology.rst`):
 * comma-separated numbers and inclusive ranges, `0-3,8-11,16`, optionally with a stride,
 * `0-15:2` (every second one). An empty string is the empty set.
 */
import { InvalidArgumentError } from '@allot/core';

const ITEM = /^(\d+)(?:-(\d+)(?::(\d+)(?:\/(\d+))?)?)?$/;

/** Numbers of a list such as `0-3,8-11:2`, ascending and without duplicates. */
export function parseCpuList(text: string): number[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];
  const out = new Set<number>();
  for (const item of trimmed.split(',')) {
    const match = ITEM.exec(item.trim());
    if (match === null) {
      throw new InvalidArgumentError('cpu list', text, 'a list such as "0-3,8-11,16"');
    }
    const first = Number(match[1]);
    const last = match[2] === undefined ? first : Number(match[2]);
    const stride = match[3] === undefined ? 1 : Number(match[3]);
    const group = match[4] === undefined ? stride : Number(match[4]);
    if (last < first || stride < 1 || group < 1) {
      throw new InvalidArgumentError('cpu list', text, 'ranges written low-high with a stride ≥ 1');
    }
    // `a-b:used/group`: in each group of `group` numbers, the first `used` ones.
    const used = match[4] === undefined ? 1 : stride;
    const step = match[4] === undefined ? stride : group;
    for (let start = first; start <= last; start += step) {
      for (let k = 0; k < used && start + k <= last; k++) out.add(start + k);
    }
  }
  return [...out].sort((a, b) => a - b);
}

/** The shortest list for `numbers`: `[0, 1, 2, 3, 8]` → `0-3,8`. */
export function formatCpuList(numbers: readonly number[]): string {
  const sorted = [...new Set(numbers)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}
