/**
 * The live page, when `allot-lab serve --watch DIR` serves the app (its URL says `?watch`): the
 * page follows the server's `/watch/updates` (Server-Sent Events, on the page's own origin, which
 * the content security policy allows) and hands each `state` to the lab's `LivePage`, which draws
 * the job in place. A connection that drops (the server stopped, or restarted) is tried again,
 * sooner then later, up to every 15 s; the page keeps what it showed meanwhile, and the server's
 * first `state` after it answers again replaces it.
 *
 * ```
 *  EventSource('/watch/updates') ─► state ─► liveState (checked) ─► LivePage.show (@allot/lab/ui)
 *                                                 └─ not a state ─► LivePage.refuse: said, nothing drawn
 *        └─ error ─► close ─► LivePage.connection('lost', s) ─► a new EventSource after s seconds
 * ```
 */
import { h, LivePage, type LiveState, liveState } from '@allot/lab/ui';

/** The first wait before trying the server again, and the longest, in ms. */
const FIRST_RETRY_MS = 1000;
const LAST_RETRY_MS = 15_000;

/** Whether the page was opened to follow a job (`?watch`, as `allot-lab serve --watch` prints it). */
export function isLivePage(): boolean {
  return new URLSearchParams(location.search).has('watch');
}

/**
 * Draws the job the server follows into `root`, shown in place of the lab's panels (a link leads
 * to them), and keeps it up to date.
 */
export function followJob(root: HTMLElement): void {
  document.body.dataset.watch = 'true';
  root.hidden = false;
  const query = new URLSearchParams(location.search);
  query.delete('watch');
  const holder = h('div', {});
  root.replaceChildren(
    holder,
    h(
      'p',
      { class: 'small muted' },
      'To open snapshots of your own in this page: ',
      h('a', { href: `${location.pathname}${query.size > 0 ? `?${query}` : ''}` }, 'the lab'),
      '.',
    ),
  );
  // The page now asks its own server for the job's updates: say so where the page says it asks none.
  const privacy = document.querySelector('[data-testid="privacy"]');
  privacy?.replaceChildren(
    h('b', {}, 'Nothing leaves this machine.'),
    " The job's snapshots are read by allot-lab serve, here; this page asks it for their figures and connects nowhere else.",
  );
  const page = new LivePage(holder);
  let wait = FIRST_RETRY_MS;
  const connect = () => {
    page.connection('connecting');
    const source = new EventSource('/watch/updates');
    source.addEventListener('open', () => {
      wait = FIRST_RETRY_MS;
      page.connection('open');
    });
    source.addEventListener('state', (event) => {
      let state: LiveState;
      try {
        state = liveState(JSON.parse((event as MessageEvent<string>).data));
      } catch (error) {
        page.refuse(error instanceof Error ? error.message : String(error));
        return;
      }
      page.show(state);
      page.connection('open');
    });
    source.addEventListener('error', () => {
      // The browser would retry on its own after a dropped stream, but not after an answer that is
      // no event stream; one rule for both: close, and try again after a wait that grows.
      source.close();
      page.connection('lost', wait / 1000);
      setTimeout(connect, wait);
      wait = Math.min(wait * 2, LAST_RETRY_MS);
    });
  };
  connect();
}
