/**
 * The lab's HTML report, live: each replay's report page (the lab's own `renderReport`, made in
 * the worker) goes into the page as it is, so the app and `allot-lab replay` show one report. Its
 * styles and uPlot are put in once; its sections, its data block and its tooltip replace the
 * last replay's; then the report's own script draws them, as it does when the file is opened.
 *
 * The report's header (its title and the command line) is left out: the page has its own, and
 * states the command beside the what-if.
 */
import { byId } from './format';

/** Runs a script's text in the page, as the report's own `<script>` elements run. */
function run(text: string): void {
  const script = document.createElement('script');
  script.textContent = text;
  document.head.append(script);
  script.remove();
}

export class ReportView {
  private readonly root = byId('report');
  private installed = false;

  show(html: string): void {
    const page = new DOMParser().parseFromString(html, 'text/html');
    const scripts = [...page.body.querySelectorAll('script:not([type])')].map(
      (s) => s.textContent ?? '',
    );
    for (const script of page.body.querySelectorAll('script:not([type])')) script.remove();
    page.body.querySelector('h1')?.remove();
    page.body.querySelector('p.muted.small')?.remove(); // the command, the date, Node
    if (!this.installed) {
      for (const style of page.head.querySelectorAll('style')) {
        document.head.append(document.importNode(style, true));
      }
      this.installed = true;
    }
    // Keep the page where it is while the sections are replaced.
    this.root.style.minHeight = `${this.root.offsetHeight}px`;
    this.root.replaceChildren(
      ...[...page.body.childNodes].map((node) => document.importNode(node, true)),
    );
    for (const text of scripts) {
      // uPlot once; the report's script on every replay.
      if (text.startsWith('var uPlot=') && 'uPlot' in window) continue;
      run(text);
    }
    this.root.style.minHeight = '';
  }
}
