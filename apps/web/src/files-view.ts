/**
 * The files the page was given: each with how far its reading is (bytes read of its size, trace
 * entries read), then how many traces it held and the events replayed of those entries, or why it
 * could not be read; once read (or not), a button takes it away.
 */
import { byId, formatCount, h } from '@allot/lab/ui';
import type { OpenedTrace } from './protocol';

interface Item {
  readonly row: HTMLLIElement;
  readonly bar: HTMLProgressElement;
  readonly text: HTMLSpanElement;
  readonly remove: HTMLButtonElement;
  /** Trace entries read (pickled snapshots), as the reader last said. */
  entries: number;
}

const MB = 1e6;

export class FilesView {
  private readonly list = byId<HTMLUListElement>('files');
  private readonly items = new Map<number, Item>();

  /** `onRemove(id)`: the user takes file `id` away (its row is gone already). */
  constructor(private readonly onRemove: (id: number) => void) {}

  /** A file whose reading begins. */
  add(id: number, name: string, size: number | null): void {
    const bar = h('progress', { max: String(size ?? 1), value: '0', 'aria-label': `${name} read` });
    const text = h('span', { class: 'file-status' }, 'waiting for the reader');
    const remove = h(
      'button',
      { type: 'button', class: 'file-remove', 'aria-label': `remove ${name}`, title: 'remove' },
      '×',
    );
    remove.hidden = true;
    remove.addEventListener('click', () => {
      this.remove(id);
      this.onRemove(id);
    });
    const row = h(
      'li',
      { class: 'file reading', 'data-testid': 'file' },
      h('span', { class: 'file-head' }, h('span', { class: 'file-name' }, name), remove),
      bar,
      text,
    );
    this.list.append(row);
    this.items.set(id, { row, bar, text, remove, entries: 0 });
  }

  /** Takes file `id`'s row away. */
  remove(id: number): void {
    this.items.get(id)?.row.remove();
    this.items.delete(id);
  }

  progress(id: number, bytesRead: number, totalBytes: number | null, events: number): void {
    const item = this.items.get(id);
    if (!item) return;
    if (totalBytes !== null) item.bar.max = totalBytes;
    item.bar.value = bytesRead;
    item.entries = events;
    const of = totalBytes === null ? '' : ` of ${(totalBytes / MB).toFixed(1)}`;
    item.text.textContent = `${(bytesRead / MB).toFixed(1)}${of} MB read${events > 0 ? `, ${formatCount(events)} trace entries` : ''}`;
  }

  opened(id: number, traces: readonly OpenedTrace[]): void {
    const item = this.items.get(id);
    if (!item) return;
    item.row.classList.replace('reading', 'read');
    item.bar.value = item.bar.max;
    const events = traces.reduce((sum, trace) => sum + trace.events, 0);
    const devices = traces.length === 1 ? '' : `${traces.length} devices, `;
    // A snapshot's trace records each free twice (requested, then completed) and PyTorch's own
    // segment entries: the replay's events are its allocations and completed frees.
    const of =
      item.entries > events
        ? ` (allocations and frees) from ${formatCount(item.entries)} trace entries; the other entries are free requests and PyTorch's segment entries`
        : '';
    item.text.textContent = `read: ${devices}${formatCount(events)} events${of}`;
    item.text.dataset.events = String(events);
    item.text.dataset.entries = String(item.entries);
    item.bar.hidden = true;
    item.remove.hidden = false;
  }

  failed(id: number, message: string): void {
    const item = this.items.get(id);
    if (!item) return;
    item.row.classList.replace('reading', 'failed');
    item.bar.hidden = true;
    item.text.textContent = message;
    item.remove.hidden = false;
  }
}
