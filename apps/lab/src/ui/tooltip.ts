/**
 * The page's one tooltip (`#lab-tooltip`): beside the mouse (or the finger, or the item the keys
 * chose), kept inside the window on both sides, and pinned where a click or a tap leaves it (the
 * timeline's) until it is let go.
 */
import { lines } from './dom';

/** Pixels between the tooltip and the point it describes, and kept free at the window's edges. */
const GAP = 14;
const MARGIN = 8;

export class Tooltip {
  private pinned = false;

  constructor(readonly element: HTMLElement) {}

  /** Keeps the tooltip as it is (on), or lets it follow the mouse again. */
  pin(on: boolean): void {
    this.pinned = on;
    this.element.classList.toggle('pinned', on);
  }

  /**
   * Shows `parts`, a line each, beside `at` (page coordinates: a mouse or pointer event will do),
   * unless pinned: to its right, else to its left, else as far left as the window allows.
   */
  show(
    parts: readonly (Node | string)[],
    at: { readonly pageX: number; readonly pageY: number },
  ): void {
    if (this.pinned) return;
    const tip = this.element;
    tip.replaceChildren(...lines(parts));
    tip.style.display = 'block';
    const left = window.scrollX + MARGIN;
    const right = window.scrollX + document.documentElement.clientWidth - MARGIN;
    const width = tip.offsetWidth;
    let x = at.pageX + GAP;
    if (x + width > right) x = at.pageX - width - GAP;
    if (x < left) x = Math.max(left, right - width);
    tip.style.left = `${x}px`;
    tip.style.top = `${at.pageY + GAP}px`;
  }

  hide(): void {
    if (!this.pinned) this.element.style.display = 'none';
  }
}
