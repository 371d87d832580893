/**
 * `@allot/lab/report`: the report page of a run's results, as `allot-lab` writes
 * `lab-report/index.html`. It inlines uPlot's script and style, which `uplotAssets()` reads from the
 * installed `uplot` package with `node:fs`; a bundle for a browser supplies those two files in its
 * place (the web app's build does).
 */
export { renderReport, uplotAssets } from './report/html';
export type { LabResults } from './run';
