/**
 * The lab's HTML report, live: each replay's report page (the lab's own `renderReportWith`, made in
 * the worker without its header: the page has its own, and states the command beside the
 * what-if) goes into the page, and the report's own `drawReport(root, data)` draws it from the
 * page's data block, as it does when the file is opened. uPlot comes from the `uplot` package,
 * bundled here; its style and the report's are put in once.
 */
import { DRAW_REPORT } from '@allot/lab/report';
import uPlot from 'uplot';
import uplotStyle from 'uplot/dist/uPlot.min.css';
import { byId } from './format';

type DrawReport = (root: HTMLElement, data: unknown) => void;

/** The report's `drawReport`, with the bundled uPlot in its scope. */
function drawReportFunction(): DrawReport {
  return new Function('uPlot', `${DRAW_REPORT}\nreturn drawReport;`)(uPlot) as DrawReport;
}

export class ReportView {
  private readonly root = byId('report');
  private draw: DrawReport | null = null;

  show(html: string): void {
    const page = new DOMParser().parseFromString(html, 'text/html');
    const data = JSON.parse(page.getElementById('lab-data')?.textContent ?? '{"workloads":[]}');
    for (const script of page.body.querySelectorAll('script')) script.remove();
    if (!this.draw) {
      const style = document.createElement('style');
      style.textContent = uplotStyle;
      document.head.append(style);
      for (const own of page.head.querySelectorAll('style')) {
        if (own.textContent) document.head.append(document.importNode(own, true));
      }
      this.draw = drawReportFunction();
    }
    // Keep the page where it is while the sections are replaced.
    this.root.style.minHeight = `${this.root.offsetHeight}px`;
    this.root.replaceChildren(
      ...[...page.body.childNodes].map((node) => document.importNode(node, true)),
    );
    this.draw(this.root, data);
    this.root.style.minHeight = '';
    document.body.dataset.rendered = 'true';
  }
}
