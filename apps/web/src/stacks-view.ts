/**
 * Who holds the memory at the stepper's event, by call stack: the lab's call tree
 * (`stackTreeView` of @allot/lab/ui) of the blocks live just after the event, under the pool's
 * state (`#state-stacks`). A search typed in it stays while the stepper moves.
 */

import { byId, formatCount, h, stackTreeView } from '@allot/lab/ui';
import type { StateStacks } from './protocol';

export class StacksView {
  private readonly root = byId('state-stacks');
  private query = '';

  /** The tree after event `event`, or a word on why there is none. */
  show(event: number, stacks: StateStacks | null): void {
    if (stacks === null) {
      this.root.replaceChildren(
        h(
          'p',
          { class: 'small muted' },
          'No stacks in this recording: record them with torch.cuda.memory._record_memory_history(stacks="python") to see who holds the memory.',
        ),
      );
      return;
    }
    const view = stackTreeView(stacks.tree, stacks.frameTexts, {
      label: 'live memory at the event by call stack',
      query: this.query,
      onQuery: (query) => {
        this.query = query;
      },
    });
    this.root.replaceChildren(
      h('h3', {}, `Who holds the memory after event ${formatCount(event)}, by call stack`),
      view,
    );
  }

  clear(): void {
    this.root.replaceChildren();
  }
}
