/**
 * The rows of a table of a job's ranks, for a job's page (job-page.ts) and the web app's job panel
 * alike: per rank its name (a link to its own page where it has one), its file, then its figures,
 * or one note across their columns for a rank that has none (it failed, or is still being read).
 */
import { h } from './dom';

/** A figure's cell: its text, or its text with attributes (a tooltip, the figure as data). */
export type RankCell =
  | string
  | { readonly text: string; readonly attributes: Readonly<Record<string, string>> };

/** One rank's row. */
export interface RankRow {
  /** The first cell's text: the rank as the table names it. */
  readonly name: string;
  /** Its own page, which the name links to. */
  readonly href?: string | null;
  /** Its file; null: the note spans the file's column too. */
  readonly file: string | null;
  /** A cell per column after the file's; or, for a rank without figures, a note across them. */
  readonly cells: readonly RankCell[] | { readonly note: string; readonly class: string };
  /** The row's own attributes (a class, data attributes). */
  readonly attributes?: Readonly<Record<string, string>>;
}

/** The header row of the columns `head` (the rank's and the file's first), and a row per rank. */
export function rankRows(
  head: readonly string[],
  rows: readonly RankRow[],
): { header: HTMLTableRowElement; rows: HTMLTableRowElement[] } {
  const cell = (item: RankCell) =>
    typeof item === 'string' ? h('td', {}, item) : h('td', item.attributes, item.text);
  return {
    header: h('tr', {}, ...head.map((title) => h('th', { scope: 'col' }, title))),
    rows: rows.map(({ name, href, file, cells, attributes = {} }) =>
      h(
        'tr',
        attributes,
        h('th', { scope: 'row' }, href == null ? name : h('a', { href }, name)),
        ...(file === null ? [] : [h('td', { class: 'file' }, file)]),
        ...('note' in cells
          ? [
              h(
                'td',
                { colspan: String(head.length - (file === null ? 1 : 2)), class: cells.class },
                cells.note,
              ),
            ]
          : cells.map(cell)),
      ),
    ),
  };
}
