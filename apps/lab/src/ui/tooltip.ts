/**
 * The page's one tooltip (`#lab-tooltip`): beside the mouse, kept inside the window, and pinned
 * where a click leaves it (the timeline's) until it is let go.
 */
import { lines } from './dom';

export class Tooltip {
  private pinned = false;

  constructor(readonly element: HTMLElement) {}

  /** Keeps the tooltip as it is (on), or lets it follow the mouse again. */
  pin(on: boolean): void {
    this.pinned = on;
    this.element.classList.toggle('pinned', on);
  }

  /** Shows `parts`, a line each, beside the mouse of `event` (unless pinned). */
  show(parts: readonly (Node | string)[], event: MouseEvent): void {
    if (this.pinned) return;
    const tip = this.element;
    tip.replaceChildren(...lines(parts));
    tip.style.display = 'block';
    let x = event.pageX + 14;
    const width = tip.offsetWidth;
    if (x + width > window.scrollX + document.documentElement.clientWidth - 8) {
      x = event.pageX - width - 14;
    }
    tip.style.left = `${x}px`;
    tip.style.top = `${event.pageY + 14}px`;
  }

  hide(): void {
    if (!this.pinned) this.element.style.display = 'none';
  }
}
