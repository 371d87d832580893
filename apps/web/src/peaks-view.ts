/**
 * The what-if's answer beside the recording, per trace: the predicted peak reserved under the
 * controls' settings (`[data-testid="predicted-peak"]`, its bytes in `data-bytes`), PyTorch's own
 * peak in the recording, and the replay of the recorded settings, drawn to one scale.
 */
import {
  byId,
  formatBytes,
  formatChange,
  formatCount,
  h,
  type RowBrief,
  settingName,
  type TraceBrief,
} from '@allot/lab/ui';

function bar(label: string, bytes: number, largest: number, kind: string): HTMLDivElement {
  const width = largest > 0 ? Math.max(0.5, (bytes / largest) * 100) : 0;
  return h(
    'div',
    { class: `bar ${kind}` },
    h('span', { class: 'bar-label' }, label),
    h(
      'span',
      { class: 'bar-track' },
      h('span', { class: 'bar-fill', style: `width:${width.toFixed(2)}%` }),
    ),
    h('span', { class: 'bar-value' }, formatBytes(bytes)),
  );
}

function against(row: RowBrief, recorded: number | null): string {
  if (recorded === null || recorded <= 0) return '';
  const change = (row.peakReservedBytes - recorded) / recorded;
  return change === 0
    ? 'exactly what PyTorch reserved in the recording'
    : `${formatChange(change)} against what PyTorch reserved in the recording`;
}

function card(trace: TraceBrief): HTMLElement {
  const { whatIf, recorded } = trace;
  const recordedPeak = trace.recordedPeakReservedBytes;
  const largest = Math.max(
    whatIf.peakReservedBytes,
    recorded?.peakReservedBytes ?? 0,
    recordedPeak ?? 0,
  );
  const output = h(
    'output',
    {
      class: 'predicted',
      'data-testid': 'predicted-peak',
      'data-bytes': String(whatIf.peakReservedBytes),
      'data-config': whatIf.config,
      'data-state': 'ready',
      title: `${formatCount(whatIf.peakReservedBytes)} bytes`,
    },
    formatBytes(whatIf.peakReservedBytes),
  );
  const notes = [
    against(whatIf, recordedPeak),
    `${formatCount(whatIf.segmentCalls)} segment allocations (cudaMalloc or map calls)`,
  ].filter((note) => note !== '');
  const failed =
    whatIf.failures > 0
      ? [
          h(
            'p',
            { class: 'failed' },
            `${formatCount(whatIf.failures)} allocations fail on this card: out of memory`,
          ),
        ]
      : [];
  return h(
    'article',
    { class: 'peak-card', 'data-trace': trace.id },
    h('h3', {}, trace.title),
    h(
      'p',
      { class: 'predicted-line' },
      h('span', { class: 'label' }, 'predicted peak reserved'),
      output,
    ),
    h('p', { class: 'setting' }, `with ${settingName(whatIf.config)} (row ${whatIf.allocator})`),
    h(
      'div',
      { class: 'bars', role: 'img', 'aria-label': 'peak reserved, to one scale' },
      ...(recordedPeak !== null
        ? [bar('PyTorch, recorded', recordedPeak, largest, 'recorded')]
        : []),
      ...(recorded !== null && recorded !== whatIf
        ? [
            bar(
              trace.recordedConfig === null ? 'replay, defaults' : 'replay, as recorded',
              recorded.peakReservedBytes,
              largest,
              'replayed',
            ),
          ]
        : []),
      bar('what-if', whatIf.peakReservedBytes, largest, 'what-if'),
    ),
    h('p', { class: 'small muted' }, notes.join('; ')),
    ...failed,
  );
}

export class PeaksView {
  private readonly root = byId('peaks');
  private readonly command = byId('command');

  /** A replay is under way: the figures shown are the previous setting's. */
  busy(): void {
    this.root.classList.add('busy');
    for (const output of this.root.querySelectorAll('output')) output.dataset.state = 'replaying';
  }

  show(traces: readonly TraceBrief[], command: string, milliseconds: number): void {
    this.root.classList.remove('busy');
    this.root.replaceChildren(
      ...traces.map(card),
      h('p', { class: 'small muted timing' }, `replayed in ${formatCount(milliseconds)} ms`),
    );
    this.command.textContent = command;
  }

  failed(message: string): void {
    this.root.classList.remove('busy');
    this.root.replaceChildren(h('p', { class: 'failed' }, `The replay failed: ${message}`));
  }
}
