/**
 * A rank's post-mortem on the live page, drawn the moment its out-of-memory dump lands: the
 * request and the wall it hit, who holds the memory by source line, the settings that avoid it,
 * the pool at the failing request beside the same moment under the setting with the most headroom
 * (drawn as the report draws its layouts), and the whole post-mortem in the words
 * `allot-lab watch` prints.
 */
import type { OomFigures } from '../analysis/post-mortem';
import { formatBytes, formatCount, settingName, triedToAllocate, wallOrigin } from '../units';
import { h } from './dom';
import { drawLayouts, type LayoutItem } from './layouts';
import type { LiveOom } from './live-data';
import type { Tooltip } from './tooltip';

/** Settings that avoid the error listed by name; the text below names them all. */
const SETTINGS_SHOWN = 5;

/** The wall, and what it is made of. */
function wallText(oom: OomFigures): string {
  const { recorded } = oom;
  if (oom.capacityBytes === null) {
    return 'The wall is unknown: the dump does not say how much memory was free on the device.';
  }
  const made =
    oom.capacitySource === 'oom' && recorded.deviceFreeBytes !== null
      ? `${formatBytes(recorded.reservedBytes)} reserved by PyTorch (${formatBytes(recorded.allocatedBytes)} of it allocated) + ${formatBytes(recorded.deviceFreeBytes)} free on the device`
      : wallOrigin(oom.capacitySource);
  return `The wall: ${formatBytes(oom.capacityBytes)}, ${made}.`;
}

/** Whether the model fails where PyTorch did, in a sentence. */
function verdictText(oom: OomFigures): string | null {
  if (oom.reproduced === undefined) return null;
  if (oom.reproduced !== null) {
    return `Reproduced: the replay of the recorded settings at the wall fails at the same request (entry ${formatCount(oom.reproduced.event)}).`;
  }
  return oom.failedEarlier !== undefined
    ? `Not reproduced: the replay at the wall fails earlier, at entry ${formatCount(oom.failedEarlier.event)}.`
    : 'Not reproduced: the replay at the wall serves every request.';
}

/** A setting as the terminal writes it. */
function confText(conf: string): string {
  return conf === '' ? "PyTorch's defaults" : `PYTORCH_CUDA_ALLOC_CONF=${conf}`;
}

function holdersTable(oom: OomFigures): HTMLElement[] {
  const holders = oom.state?.holders ?? [];
  if (holders.length === 0) return [];
  return [
    h('h4', {}, 'Who holds the memory at that request, by source line'),
    h(
      'div',
      { class: 'table-scroll' },
      h(
        'table',
        { class: 'peak-table', 'data-testid': 'watch-holders' },
        h(
          'thead',
          {},
          h('tr', {}, ...['#', 'live bytes', 'blocks', 'source line'].map((t) => h('th', {}, t))),
        ),
        h(
          'tbody',
          {},
          ...holders.map((holder, i) =>
            h(
              'tr',
              {},
              h('td', {}, String(i + 1)),
              h('td', {}, formatBytes(holder.bytes)),
              h('td', {}, formatCount(holder.blocks)),
              h('td', { class: 'frame' }, holder.frame),
            ),
          ),
        ),
      ),
    ),
  ];
}

function settingsList(oom: OomFigures): HTMLElement[] {
  const avoided = oom.avoidedBy;
  if (avoided === undefined) return [];
  const heading = h('h4', {}, 'The settings that avoid it');
  if (avoided.length === 0) {
    const needs = oom.needs;
    return [
      heading,
      h(
        'p',
        {},
        needs === undefined
          ? 'No setting tried avoids it.'
          : `No setting avoids it at this wall: the best (${settingName(needs.bestAllocConf)}) would need ${formatBytes(needs.bestBytes)}; the recording needs at least ${formatBytes(needs.leastBytes)}.`,
      ),
    ];
  }
  const more = avoided.length - SETTINGS_SHOWN;
  return [
    heading,
    h(
      'ol',
      { 'data-testid': 'watch-avoided-by' },
      ...avoided
        .slice(0, SETTINGS_SHOWN)
        .map((setting) =>
          h(
            'li',
            {},
            h('code', {}, confText(setting.allocConf)),
            `: peak reserved ${formatBytes(setting.peakReservedBytes)}, ${formatBytes(setting.headroomBytes)} below the wall`,
          ),
        ),
    ),
    ...(more > 0
      ? [h('p', { class: 'small muted' }, `and ${formatCount(more)} more, in the text below`)]
      : []),
  ];
}

/** The pool at the failing request, and the same moment under the setting with the most headroom. */
function layoutItems(oom: OomFigures): LayoutItem[] {
  if (oom.layoutAtFailure === undefined) return [];
  const failing = oom.reproduced ?? oom.failedEarlier;
  const at = failing === undefined ? '' : ` (entry ${formatCount(failing.event)})`;
  const items: LayoutItem[] = [
    {
      name: `At the failing request${at}, recorded settings`,
      label: 'recorded settings',
      view: oom.layoutAtFailure,
      extra: '',
    },
  ];
  const advice = oom.adviceLayout;
  if (advice !== undefined) {
    const name = settingName(advice.allocConf);
    items.push({
      name: `The same moment under ${name}, the request served`,
      label: name,
      view: advice.layout,
      extra: '',
    });
  }
  return items;
}

/** A post-mortem's element, and its drawing of the pool (again at a new width). */
export interface PostMortemView {
  readonly element: HTMLElement;
  draw(): void;
}

/** The post-mortem of `dead` (see the module comment); call `draw` once it is in the page. */
export function postMortemView(dead: LiveOom, tooltip: Tooltip): PostMortemView {
  const { oom } = dead;
  const request =
    `The request: ${formatBytes(oom.recorded.sizeBytes)} on stream ${oom.recorded.stream}` +
    triedToAllocate(oom.recorded.sizeBytes, oom.recorded.allocationBytes) +
    (oom.at === undefined ? '.' : ', from ');
  const verdict = verdictText(oom);
  const items = layoutItems(oom);
  const scale = h('span', {});
  const layouts = h('div', { class: 'oom-layouts' });
  const element = h(
    'section',
    {
      class: 'oom watch-oom',
      'data-testid': 'watch-post-mortem',
      'data-rank': String(dead.rank),
      'data-file': dead.file,
    },
    h(
      'h3',
      {},
      `Rank ${dead.rank} ran out of memory${dead.step === null ? '' : ` in step ${dead.step}`}`,
    ),
    h('p', { class: 'small muted' }, dead.lines[1]?.trim() ?? dead.file),
    h(
      'ul',
      {},
      h('li', {}, request, ...(oom.at === undefined ? [] : [h('code', {}, oom.at)])),
      h('li', { 'data-testid': 'watch-wall' }, wallText(oom)),
      ...(verdict === null ? [] : [h('li', {}, verdict)]),
    ),
    ...holdersTable(oom),
    ...settingsList(oom),
    ...(items.length === 0
      ? []
      : [
          h('h4', {}, 'The pool at that request'),
          h('p', { class: 'small muted' }, scale, ' Hover on a block for its segment and size.'),
          layouts,
        ]),
    h(
      'details',
      {},
      h('summary', {}, 'The post-mortem as allot-lab watch prints it'),
      h('pre', { class: 'watch-text' }, dead.lines.join('\n')),
    ),
  );
  return {
    element,
    draw: () => {
      if (items.length > 0) drawLayouts(layouts, scale, items, 'Both to one scale: ', tooltip);
    },
  };
}
