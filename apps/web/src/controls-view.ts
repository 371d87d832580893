/**
 * The what-if's controls: the caching allocator's settings that move a peak most, and the card.
 * Each change gives the page new {@link Knobs}; the page replays them in the worker.
 */
import { byId, h } from '@allot/lab/ui';
import type { Knobs } from './protocol';

/** The values the lab's tuner tries (apps/lab/src/analysis/tune.ts), and off. */
const MAX_SPLIT_MB = [20, 32, 64, 128, 256, 512, 1024, 4096];
const DIVISIONS = [0, 1, 2, 4, 8, 16];
const THRESHOLDS = [0, 0.5, 0.6, 0.7, 0.8, 0.9];
/** Cards' memory in GiB: the H100 as `total_memory` reported it for the recordings here, then round figures. */
const CARDS: readonly [string, number][] = [
  ['H100 80GB, as measured', 79.19],
  ['16 GiB', 16],
  ['24 GiB', 24],
  ['40 GiB', 40],
  ['48 GiB', 48],
  ['80 GiB', 80],
  ['141 GiB', 141],
];
function select(name: string, options: readonly [string, string][]): HTMLSelectElement {
  const element = h('select', { name, id: `knob-${name}`, 'data-testid': name });
  for (const [value, label] of options) element.append(h('option', { value }, label));
  return element;
}

/** Makes sure `select` offers `value` (a recorded value off the usual list). */
function offer(element: HTMLSelectElement, value: string, label: string): void {
  if (![...element.options].some((option) => option.value === value)) {
    element.append(h('option', { value }, label));
  }
  element.value = value;
}

function field(label: string, control: HTMLElement, hint?: string): HTMLDivElement {
  return h(
    'div',
    { class: 'field' },
    h('label', { for: control.id }, label),
    control,
    ...(hint ? [h('span', { class: 'hint' }, hint)] : []),
  );
}

export class ControlsView {
  private readonly form = byId<HTMLFormElement>('controls');
  private readonly expandable = h('input', {
    type: 'checkbox',
    name: 'expandable_segments',
    id: 'knob-expandable_segments',
    'data-testid': 'expandable_segments',
  });
  private readonly maxSplit = select('max_split_size_mb', [
    ['', 'no limit'],
    ...MAX_SPLIT_MB.map((mb): [string, string] => [String(mb), `${mb} MiB`]),
  ]);
  private readonly divisions = select(
    'roundup_power2_divisions',
    DIVISIONS.map((d): [string, string] => [String(d), d === 0 ? '0 (off)' : String(d)]),
  );
  private readonly threshold = select(
    'garbage_collection_threshold',
    THRESHOLDS.map((t): [string, string] => [String(t), t === 0 ? 'off' : String(t)]),
  );
  private readonly memory = h('input', {
    type: 'number',
    name: 'memory',
    id: 'knob-memory',
    'data-testid': 'memory',
    min: '0.5',
    step: 'any',
    placeholder: 'not stated',
    list: 'cards',
    inputmode: 'decimal',
  });
  private readonly fraction = h('input', {
    type: 'number',
    name: 'fraction',
    id: 'knob-fraction',
    'data-testid': 'fraction',
    min: '0.01',
    max: '1',
    step: '0.01',
    placeholder: 'none',
    inputmode: 'decimal',
  });
  private readonly recordedHint = h('p', { class: 'hint recorded-hint' });
  private recorded: Knobs | null = null;

  constructor(private readonly onChange: (knobs: Knobs) => void) {
    const cards = h('datalist', { id: 'cards' });
    for (const [name, gib] of CARDS) cards.append(h('option', { value: String(gib) }, name));
    const reset = h('button', { type: 'button', class: 'link' }, 'back to the recorded settings');
    reset.addEventListener('click', () => {
      if (this.recorded === null) return;
      this.set({
        ...this.recorded,
        memoryGiB: this.knobs().memoryGiB,
        fraction: this.knobs().fraction,
      });
      this.changed();
    });
    this.form.append(
      h(
        'fieldset',
        {},
        h('legend', {}, 'PYTORCH_CUDA_ALLOC_CONF'),
        h(
          'div',
          { class: 'field check' },
          this.expandable,
          h('label', { for: this.expandable.id }, 'expandable_segments'),
          h('span', { class: 'hint' }, 'one segment per stream, grown in place'),
        ),
        field('max_split_size_mb', this.maxSplit, 'larger blocks are never split'),
        field(
          'roundup_power2_divisions',
          this.divisions,
          'round requests to 1/N of a power of two',
        ),
        field(
          'garbage_collection_threshold',
          this.threshold,
          'frees cached blocks past this share of the cap; acts only under a fraction',
        ),
        this.recordedHint,
        reset,
      ),
      h(
        'fieldset',
        {},
        h('legend', {}, 'The card'),
        field('memory (GiB)', this.memory, 'as total_memory reports it; empty: no limit'),
        cards,
        field(
          'per-process fraction',
          this.fraction,
          'set_per_process_memory_fraction; needs the memory',
        ),
      ),
    );
    this.form.addEventListener('submit', (event) => event.preventDefault());
    for (const control of [this.expandable, this.maxSplit, this.divisions, this.threshold]) {
      control.addEventListener('change', () => this.changed());
    }
    for (const control of [this.memory, this.fraction]) {
      control.addEventListener('change', () => this.changed());
    }
  }

  /** The recording's own settings: the controls start there, and the hint names them. */
  setRecorded(knobs: Knobs, config: string | null): void {
    this.recorded = knobs;
    this.recordedHint.textContent =
      config === null
        ? "The recording states no settings: PyTorch's defaults are assumed."
        : `Recorded: PYTORCH_CUDA_ALLOC_CONF=${config === '' ? "'' (the defaults)" : config}`;
    this.set(knobs);
  }

  set(knobs: Knobs): void {
    this.expandable.checked = knobs.expandableSegments;
    const split = knobs.maxSplitSizeMb;
    offer(this.maxSplit, split === null ? '' : String(split), `${split} MiB`);
    const divisions = knobs.roundupPower2Divisions;
    offer(
      this.divisions,
      divisions === null ? 'recorded' : String(divisions),
      'as recorded (per size)',
    );
    offer(
      this.threshold,
      String(knobs.garbageCollectionThreshold),
      String(knobs.garbageCollectionThreshold),
    );
    this.memory.value = knobs.memoryGiB === null ? '' : String(knobs.memoryGiB);
    this.fraction.value = knobs.fraction === null ? '' : String(knobs.fraction);
    this.fraction.disabled = knobs.memoryGiB === null;
  }

  /** What the controls say now (a value out of range reads as not stated). */
  knobs(): Knobs {
    const number = (input: HTMLInputElement, low: number, high: number) => {
      const value = input.valueAsNumber;
      return Number.isFinite(value) && value >= low && value <= high ? value : null;
    };
    const memoryGiB = number(this.memory, 0.5, 1 << 20);
    return {
      expandableSegments: this.expandable.checked,
      maxSplitSizeMb: this.maxSplit.value === '' ? null : Number(this.maxSplit.value),
      roundupPower2Divisions:
        this.divisions.value === 'recorded' ? null : Number(this.divisions.value),
      garbageCollectionThreshold: Number(this.threshold.value),
      memoryGiB,
      fraction: memoryGiB === null ? null : number(this.fraction, 0.01, 1),
    };
  }

  private changed(): void {
    const knobs = this.knobs();
    this.fraction.disabled = knobs.memoryGiB === null;
    this.onChange(knobs);
  }
}
