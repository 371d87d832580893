/**
 * Who holds the memory, as a call tree (`report-data.ts`'s `StackTreeData`): a tree (the ARIA tree
 * pattern) whose items are frames, each with its live bytes, its share of all of them and its
 * blocks, with a search by frame text. The report draws it at the peak; the web app at the event
 * its stepper is on.
 *
 * ```
 *  click, Enter, Space   expand or collapse            ← →   collapse / to the parent, expand / in
 *  ↑ ↓ Home End          the item above, below, first, last   search: the frames whose text holds
 *                                                              it, their callers opened, marked
 * ```
 *
 * Items are made as their parent opens, so a tree of thousands of nodes costs only what is shown.
 * The nodes holding half the bytes or more open at first: the heaviest path is in view. Each item
 * says its frame in `data-frame` and its bytes in `data-bytes`.
 */
import { formatBytes, formatCount, formatPercent } from '../units';
import { h } from './dom';
import { type StackTreeData, SUMMED_FRAME, UNRECORDED_FRAME } from './report-data';

/** Levels indented; deeper ones line up with the last (a deep stack would leave no room). */
const MAX_INDENT = 14;
/** Pixels of indent per level. */
const INDENT = 12;
/** Share of all bytes from which a node is open at first. */
const OPEN_SHARE = 0.5;

/** Options of {@link stackTreeView}. */
export interface StackTreeViewOptions {
  /** The tree's accessible name. */
  readonly label: string;
  /** A search to begin with (a tree drawn again, for another moment, keeps the user's). */
  readonly query?: string;
  /** Told of each search typed. */
  readonly onQuery?: (query: string) => void;
}

/** The tree's columns with each node's callees. */
interface Nodes {
  readonly tree: StackTreeData;
  readonly texts: readonly string[];
  readonly roots: number[];
  readonly children: number[][];
}

function nodesOf(tree: StackTreeData, texts: readonly string[]): Nodes {
  const roots: number[] = [];
  const children: number[][] = tree.parent.map(() => []);
  tree.parent.forEach((parent, node) => {
    if (parent < 0) roots.push(node);
    else children[parent]!.push(node);
  });
  return { tree, texts, roots, children };
}

/** The text of node `node`'s frame, as the page says it. */
function frameLabel({ tree, texts }: Nodes, node: number): string {
  const frame = tree.frame[node]!;
  if (frame === SUMMED_FRAME) {
    const paths = tree.self[node]!;
    return `${formatCount(paths)} smaller call ${paths === 1 ? 'path' : 'paths'}, each under ${formatBytes(tree.minBytes)}`;
  }
  if (frame === UNRECORDED_FRAME) return '(no stack recorded)';
  return texts[frame] ?? '?';
}

/** `text` with each occurrence of `query` (lower case) marked. */
function marked(text: string, query: string): (Node | string)[] {
  if (query === '') return [text];
  const parts: (Node | string)[] = [];
  const lower = text.toLowerCase();
  let at = 0;
  for (let found = lower.indexOf(query); found >= 0; found = lower.indexOf(query, at)) {
    parts.push(text.slice(at, found), h('mark', {}, text.slice(found, found + query.length)));
    at = found + query.length;
  }
  parts.push(text.slice(at));
  return parts;
}

/** `name (file:line)` as the function's name, then its place, dimmed. */
function frameParts(text: string, query: string): (Node | string)[] {
  const place = /^(.*) (\([^()]*:\d+\))$/.exec(text);
  if (place === null) return marked(text, query);
  return [
    h('span', { class: 'stack-name' }, ...marked(place[1]!, query)),
    ' ',
    h('span', { class: 'stack-place' }, ...marked(place[2]!, query)),
  ];
}

/** The search's state: the matching nodes, those on a path to one, the query. */
interface Filter {
  readonly query: string;
  readonly matched: ReadonlySet<number>;
  readonly onPath: ReadonlySet<number>;
}

function filterOf(nodes: Nodes, query: string): Filter {
  const matched = new Set<number>();
  const onPath = new Set<number>();
  const { tree } = nodes;
  tree.frame.forEach((frame, node) => {
    if (frame < 0 || !nodes.texts[frame]!.toLowerCase().includes(query)) return;
    matched.add(node);
    for (let up = tree.parent[node]!; up >= 0 && !onPath.has(up); up = tree.parent[up]!) {
      onPath.add(up);
    }
  });
  return { query, matched, onPath };
}

/** Draws `tree` (frames indices into `frameTexts`) with its search (see the module comment). */
export function stackTreeView(
  tree: StackTreeData,
  frameTexts: readonly string[],
  { label, query = '', onQuery }: StackTreeViewOptions,
): HTMLElement {
  const nodes = nodesOf(tree, frameTexts);
  const list = h('ul', { role: 'tree', class: 'stack-tree', 'aria-label': label });
  const search = h('input', {
    type: 'search',
    class: 'stack-search',
    placeholder: 'find a frame: function or file',
    'aria-label': `find a frame in ${label}`,
  });
  const found = h('p', { class: 'small muted stack-found', 'aria-live': 'polite' });
  let filter: Filter | null = null;
  /** The one item reached by Tab (roving focus). */
  let current: HTMLElement | null = null;

  const share = (bytes: number) => formatPercent(tree.bytes > 0 ? bytes / tree.bytes : 0);

  /** Node `node`'s callees shown: under a search, those on a path to a match or below one. */
  function shownChildren(node: number, all: boolean): number[] {
    const children = nodes.children[node]!;
    if (filter === null || all) return children;
    return children.filter((child) => filter!.matched.has(child) || filter!.onPath.has(child));
  }

  function item(node: number, level: number, position: number, size: number, all: boolean) {
    const text = frameLabel(nodes, node);
    const bytes = tree.nodeBytes[node]!;
    const below = all || filter?.matched.has(node) === true;
    const callees = shownChildren(node, below);
    const special = tree.frame[node]! < 0;
    const row = h(
      'div',
      { class: 'stack-row' },
      h('span', { class: 'stack-twisty', 'aria-hidden': 'true' }),
      h(
        'span',
        { class: special ? 'stack-frame stack-special' : 'stack-frame' },
        ...(special ? [text] : frameParts(text, filter?.query ?? '')),
      ),
      h('span', { class: 'stack-bytes' }, formatBytes(bytes)),
      h('span', { class: 'stack-share' }, share(bytes)),
      h(
        'span',
        { class: 'stack-blocks' },
        `${formatCount(tree.nodeBlocks[node]!)} ${tree.nodeBlocks[node] === 1 ? 'block' : 'blocks'}`,
      ),
      h('span', {
        class: 'stack-bar',
        style: `width:${(tree.bytes > 0 ? (bytes / tree.bytes) * 100 : 0).toFixed(2)}%`,
      }),
    );
    row.style.paddingLeft = `${Math.min(level - 1, MAX_INDENT) * INDENT}px`;
    const element = h(
      'li',
      {
        role: 'treeitem',
        tabindex: '-1',
        'aria-level': String(level),
        'aria-setsize': String(size),
        'aria-posinset': String(position),
        'aria-label': `${text}: ${formatBytes(bytes)}, ${share(bytes)}`,
        'data-frame': text,
        'data-bytes': String(bytes),
        ...(filter?.matched.has(node) ? { class: 'stack-match' } : {}),
      },
      row,
    );
    if (callees.length > 0) {
      const open = filter === null ? bytes >= OPEN_SHARE * tree.bytes : filter.onPath.has(node);
      element.setAttribute('aria-expanded', 'false');
      const state = { node, level, all: below, made: false };
      groups.set(element, state);
      if (open) toggle(element, true);
    }
    return element;
  }

  const groups = new WeakMap<
    HTMLElement,
    { node: number; level: number; all: boolean; made: boolean }
  >();

  function itemsOf(node: number, level: number, all: boolean): HTMLElement[] {
    const callees = node < 0 ? rootsShown() : shownChildren(node, all);
    return callees.map((child, i) => item(child, level, i + 1, callees.length, all));
  }

  function rootsShown(): number[] {
    if (filter === null) return nodes.roots;
    return nodes.roots.filter((root) => filter!.matched.has(root) || filter!.onPath.has(root));
  }

  /** Opens (or closes) `element`'s callees, making them the first time. */
  function toggle(element: HTMLElement, open: boolean): void {
    const state = groups.get(element);
    if (state === undefined) return;
    element.setAttribute('aria-expanded', String(open));
    let group = element.querySelector<HTMLElement>(':scope > ul');
    if (!state.made) {
      state.made = true;
      group = h('ul', { role: 'group' }, ...itemsOf(state.node, state.level + 1, state.all));
      element.append(group);
    }
    if (group) group.hidden = !open;
  }

  /** The items not inside a closed group, in order. */
  function visible(): HTMLElement[] {
    return [...list.querySelectorAll<HTMLElement>('[role="treeitem"]')].filter(
      (element) => element.parentElement?.closest('ul[hidden]') === null,
    );
  }

  function focus(element: HTMLElement | undefined): void {
    if (element === undefined) return;
    if (current) current.tabIndex = -1;
    current = element;
    element.tabIndex = 0;
    element.focus();
  }

  function draw(): void {
    list.replaceChildren(...itemsOf(-1, 1, false));
    current = list.querySelector<HTMLElement>('[role="treeitem"]');
    if (current) current.tabIndex = 0;
    if (filter === null) {
      found.textContent = '';
      return;
    }
    let bytes = 0;
    for (const node of filter.matched) {
      let under = false;
      for (let up = tree.parent[node]!; up >= 0 && !under; up = tree.parent[up]!) {
        under = filter.matched.has(up);
      }
      if (!under) bytes += tree.nodeBytes[node]!;
    }
    found.textContent =
      filter.matched.size === 0
        ? `No frame holds “${filter.query}”.`
        : `${formatCount(filter.matched.size)} ${filter.matched.size === 1 ? 'frame matches' : 'frames match'}: ${formatBytes(bytes)} (${share(bytes)}) of the live bytes pass through them.`;
  }

  list.addEventListener('click', (event) => {
    const element = (event.target as Element).closest<HTMLElement>('[role="treeitem"]');
    if (element === null) return;
    toggle(element, element.getAttribute('aria-expanded') === 'false');
    focus(element);
  });
  list.addEventListener('keydown', (event) => {
    const element = (event.target as Element).closest<HTMLElement>('[role="treeitem"]');
    if (element === null) return;
    const items = visible();
    const at = items.indexOf(element);
    const expanded = element.getAttribute('aria-expanded');
    switch (event.key) {
      case 'ArrowDown':
        focus(items[at + 1]);
        break;
      case 'ArrowUp':
        focus(items[at - 1]);
        break;
      case 'Home':
        focus(items[0]);
        break;
      case 'End':
        focus(items.at(-1));
        break;
      case 'ArrowRight':
        if (expanded === 'false') toggle(element, true);
        else if (expanded === 'true') focus(items[at + 1]);
        break;
      case 'ArrowLeft':
        if (expanded === 'true') toggle(element, false);
        else focus(element.parentElement?.closest<HTMLElement>('[role="treeitem"]') ?? undefined);
        break;
      case 'Enter':
      case ' ':
        if (expanded !== null) toggle(element, expanded === 'false');
        break;
      default:
        return;
    }
    event.preventDefault();
  });
  const find = () => {
    const text = search.value.trim().toLowerCase();
    filter = text === '' ? null : filterOf(nodes, text);
    draw();
  };
  search.addEventListener('input', () => {
    onQuery?.(search.value);
    find();
  });
  search.value = query;
  find();
  return h(
    'div',
    { class: 'stack-tree-view' },
    h(
      'p',
      { class: 'small stack-total' },
      `${formatBytes(tree.bytes)} live in ${formatCount(tree.blocks)} ${tree.blocks === 1 ? 'block' : 'blocks'}. `,
      search,
    ),
    found,
    list,
  );
}
