/**
 * The active-memory timeline from the keyboard: the canvas takes the focus (Tab reaches it) and
 * these keys, so everything the mouse does there can be done without one.
 *
 * ```
 *  + −        zoom in, out (twice, half the range), about the middle
 *  ← →        pan a tenth of the range (with Shift, half)
 *  0, Home    the whole run
 *  ↓ ↑        the next, the previous allocation in view: its size, times, stream and frames
 *  Escape     let it go
 * ```
 */

/** What the keys ask of the timeline. */
export interface TimelineActions {
  /** Shows `factor` times the range in view, about its middle. */
  zoomBy(factor: number): void;
  /** Moves the range in view by `fraction` of its width. */
  panBy(fraction: number): void;
  /** Shows the whole run. */
  reset(): void;
  /** Picks the next (1) or the previous (−1) allocation in view and describes it. */
  select(step: 1 | -1): void;
  /** Lets the picked allocation go. */
  release(): void;
}

/** The keys' names, for the canvas's accessible name. */
export const TIMELINE_KEYS =
  '+ and − zoom, ← and → pan, 0 shows the whole run, ↓ and ↑ pick an allocation, Escape lets it go';

/** Makes `canvas` focusable and answers the keys above on it. */
export function timelineKeys(canvas: HTMLCanvasElement, actions: TimelineActions): void {
  canvas.tabIndex = 0;
  canvas.addEventListener('keydown', (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    switch (event.key) {
      case '+':
      case '=':
        actions.zoomBy(0.5);
        break;
      case '-':
      case '_':
        actions.zoomBy(2);
        break;
      case 'ArrowLeft':
        actions.panBy(event.shiftKey ? -0.5 : -0.1);
        break;
      case 'ArrowRight':
        actions.panBy(event.shiftKey ? 0.5 : 0.1);
        break;
      case '0':
      case 'Home':
        actions.reset();
        break;
      case 'ArrowDown':
        actions.select(1);
        break;
      case 'ArrowUp':
        actions.select(-1);
        break;
      case 'Escape':
        actions.release();
        break;
      default:
        return;
    }
    event.preventDefault();
  });
}
