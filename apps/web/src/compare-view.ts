/**
 * Two snapshots side by side, what users ask memory_viz for: the first two traces' predicted peaks
 * under the what-if's settings and PyTorch's recorded ones, the difference
 * (`[data-testid="peak-difference"]`, its bytes in `data-bytes`), and the allocations that grew
 * from the first trace's peak to the second's, grouped by the top user frame of their stacks (or
 * by size class without stacks), most grown first (`[data-testid="grown"] li`, `data-grown`).
 */
import type { GroupBy, GrownGroup } from '@allot/lab/engine';
import { byId, formatBytes, h, type TraceBrief } from '@allot/lab/ui';

function signed(bytes: number): string {
  return bytes > 0 ? `+${formatBytes(bytes)}` : bytes < 0 ? `−${formatBytes(-bytes)}` : '0 B';
}

function peakRow(trace: TraceBrief): HTMLTableRowElement {
  const recorded = trace.recordedPeakReservedBytes;
  return h(
    'tr',
    {},
    h('th', { scope: 'row' }, trace.title),
    h(
      'td',
      { 'data-bytes': String(trace.whatIf.peakReservedBytes) },
      formatBytes(trace.whatIf.peakReservedBytes),
    ),
    h('td', {}, recorded === null ? '–' : formatBytes(recorded)),
  );
}

export class CompareView {
  private readonly section = byId('compare');
  private readonly peaks = byId('compare-peaks');
  private readonly grown = byId('compare-grown');

  /** The replay's briefs: the first two traces' peaks and their difference. */
  showPeaks(traces: readonly TraceBrief[]): void {
    const [before, after] = traces;
    if (before === undefined || after === undefined) return;
    this.section.hidden = false;
    const difference = after.whatIf.peakReservedBytes - before.whatIf.peakReservedBytes;
    const recorded =
      before.recordedPeakReservedBytes !== null && after.recordedPeakReservedBytes !== null
        ? after.recordedPeakReservedBytes - before.recordedPeakReservedBytes
        : null;
    this.peaks.replaceChildren(
      h(
        'table',
        { class: 'compare-table' },
        h(
          'tr',
          {},
          h('th', {}, 'peak reserved'),
          h('th', {}, 'predicted'),
          h('th', {}, 'recorded'),
        ),
        peakRow(before),
        peakRow(after),
        h(
          'tr',
          {},
          h('th', { scope: 'row' }, 'difference'),
          h(
            'td',
            { 'data-testid': 'peak-difference', 'data-bytes': String(difference) },
            signed(difference),
          ),
          h('td', {}, recorded === null ? '–' : signed(recorded)),
        ),
      ),
    );
  }

  /** The groups that grew from the first trace's peak to the second's. */
  showGrown(by: GroupBy, groups: readonly GrownGroup[]): void {
    this.section.hidden = false;
    const what =
      by === 'frame' ? 'by the top user frame of their stacks' : 'by size (no stacks recorded)';
    this.grown.replaceChildren(
      h('p', { class: 'small muted' }, `Live allocations at each peak that grew, ${what}:`),
      groups.length === 0
        ? h('p', { class: 'small' }, 'none grew')
        : h(
            'ol',
            { class: 'grown small', 'data-testid': 'grown' },
            ...groups.map((group) =>
              h(
                'li',
                { 'data-grown': String(group.grown) },
                h('code', {}, group.group),
                `: ${formatBytes(group.before)} → ${formatBytes(group.after)} (${signed(group.grown)})`,
              ),
            ),
          ),
    );
  }

  /** Fewer than two traces are left: nothing to compare. */
  hide(): void {
    this.section.hidden = true;
    this.peaks.replaceChildren();
    this.grown.replaceChildren();
  }

  failed(message: string): void {
    this.grown.textContent = `The comparison failed: ${message}`;
  }
}
