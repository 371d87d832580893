/**
 * The script of the lab's page files, bundled with uPlot and the report's style (`report.css`)
 * into one IIFE that `report/report-file.ts` inlines: it draws the page from its data block
 * (`<script type="application/json" id="lab-data">`) into `#report`, the report's sections or,
 * where `#report` says `data-page="job"`, a job's page. The bundle's exports are the global
 * `labUi`, so a page can be drawn again (`labUi.renderSections(root, data)`, `labUi.renderJob`).
 */
import 'uplot/dist/uPlot.min.css';
import './report.css';
import type { JobPageData } from './job-data';
import { renderJob } from './job-page';
import { renderSections } from './render-sections';
import type { ReportData } from './report-data';

export { renderJob, renderSections };

const root = document.getElementById('report')!;
const data: unknown = JSON.parse(document.getElementById('lab-data')!.textContent!);
if (root.dataset.page === 'job') renderJob(root, data as JobPageData);
else renderSections(root, data as ReportData);
