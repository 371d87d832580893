/**
 * The post-mortem in words: a short form under `replay`'s fidelity lines (and in the report), and
 * the long form of `allot-lab oom`.
 */
import type { OomFigures, OomState } from '../analysis/post-mortem';
import { formatBytes, formatColumns, formatCount, formatPercent } from '../units';

const SHOWN_SETTINGS = 3;

/** What the replay at the wall did with the recorded request. */
function verdict(oom: OomFigures): string | null {
  if (oom.reproduced === undefined) return null;
  if (oom.reproduced !== null) {
    return `reproduced: replaying the recorded settings at the wall fails at entry ${formatCount(oom.reproduced.event)} too, asking for ${formatBytes(oom.reproduced.sizeBytes)}`;
  }
  if (oom.failedEarlier !== undefined) {
    return `not reproduced: the replay at the wall fails earlier, at entry ${formatCount(oom.failedEarlier.event)} (${formatBytes(oom.failedEarlier.sizeBytes)})`;
  }
  return 'not reproduced: the replay at the wall serves every request, the recorded one included';
}

/** The pool at the failing request, in the terms of PyTorch's message. */
function stateLine(s: OomState): string {
  return (
    `at that request: ${formatBytes(s.freeInCacheBytes)} reserved but unallocated, in ${formatCount(s.freeBlocks)} free ` +
    `block${s.freeBlocks === 1 ? '' : 's'}, the largest ${formatBytes(s.largestFreeBlockBytes)}; ` +
    `${formatCount(s.tooSmallBlocks)} too small for the request; ` +
    `${formatPercent(s.freeInCacheBytes > 0 ? s.remainderBytes / s.freeInCacheBytes : 0)} of the free bytes in split-off remainders`
  );
}

/** The settings that avoid the error, or what it would take. */
function adviceLines(oom: OomFigures, shown: number): string[] {
  const avoided = oom.avoidedBy;
  if (avoided === undefined) return [];
  if (avoided.length === 0) {
    const needs = oom.needs;
    return needs === undefined
      ? ['no setting tried avoids it']
      : [
          `no setting avoids it at this wall: the best (${needs.bestAllocConf || 'the defaults'}) would need ` +
            `${formatBytes(needs.bestBytes)}; the recording needs at least ${formatBytes(needs.leastBytes)} ` +
            '(its peak live bytes, or the bytes live at the error plus its request)',
        ];
  }
  const conf = (text: string) => (text === '' ? '(defaults)' : `PYTORCH_CUDA_ALLOC_CONF=${text}`);
  const best = avoided[0]!;
  const lines = [
    `avoided by ${formatCount(avoided.length)} setting${avoided.length === 1 ? '' : 's'} tried; the most headroom: ${conf(best.allocConf)} ` +
      `(peak reserved ${formatBytes(best.peakReservedBytes)}, ${formatBytes(best.headroomBytes)} below the wall)`,
  ];
  for (const setting of avoided.slice(1, shown)) {
    lines.push(
      `  then ${conf(setting.allocConf)} (peak ${formatBytes(setting.peakReservedBytes)}, ${formatBytes(setting.headroomBytes)} headroom)`,
    );
  }
  if (avoided.length > shown)
    lines.push(
      `  and ${formatCount(avoided.length - shown)} more (allot-lab oom FILE lists them all)`,
    );
  return lines;
}

/** The short post-mortem under a recorded out-of-memory error. */
export function postMortemLines(oom: OomFigures): string[] {
  const first = verdict(oom);
  if (first === null) return [];
  const lines = [first];
  if (oom.state !== undefined) lines.push(stateLine(oom.state));
  lines.push(...adviceLines(oom, SHOWN_SETTINGS));
  return lines.map((line) => `    ${line}`);
}

/** The long post-mortem of `allot-lab oom`: the state by pool, who holds the memory, every setting. */
export function postMortemReport(
  title: string,
  oom: OomFigures,
  head: readonly string[],
): string[] {
  const lines = [title, ...head];
  const first = verdict(oom);
  if (first === null) {
    lines.push('  the wall is unknown: state the device with --memory to replay at it');
    return lines;
  }
  lines.push('', `  ${first}`);
  const s = oom.state;
  if (s !== undefined) {
    lines.push(`  ${stateLine(s)}`);
    lines.push(
      `  the model then: ${formatBytes(s.reservedBytes)} reserved, ${formatBytes(s.allocatedBytes)} in allocated blocks`,
    );
    const table = [['pool', 'stream', 'reserved', 'free in the cache']];
    for (const pool of s.byPool) {
      table.push([
        pool.pool,
        String(pool.stream),
        formatBytes(pool.reservedBytes),
        formatBytes(pool.freeBytes),
      ]);
    }
    lines.push('', ...formatColumns(table).map((line) => `    ${line}`));
    if (s.holders.length > 0) {
      lines.push(
        '',
        '  who holds the memory at that request, by the innermost frame of your own code:',
      );
      const cells = s.holders.map((h, i) => [
        `${i + 1}.`,
        formatBytes(h.bytes),
        `${formatCount(h.blocks)} block${h.blocks === 1 ? '' : 's'}`,
      ]);
      lines.push(...formatColumns(cells).map((line, i) => `    ${line}  ${s.holders[i]!.frame}`));
    }
  }
  lines.push('', ...adviceLines(oom, Number.POSITIVE_INFINITY).map((line) => `  ${line}`));
  return lines;
}
