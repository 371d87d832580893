/**
 * `@allot/lab/report`: the report page of a run's results, without Node.js (a browser bundle needs
 * no shim): `renderReportWith` takes uPlot's script and style from its caller (`allot-lab` reads
 * them from the installed `uplot` package), `pageData` is the page's data block, and `DRAW_REPORT`
 * the source of the page's `drawReport(root, data)`, for a page that draws the report itself.
 */
export { DRAW_REPORT } from './report/client-script';
export { pageData, REPORT_STYLE, renderReportWith } from './report/page';
export type { LabResults } from './run';
