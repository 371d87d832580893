/**
 * The report file's script, bundled with uPlot and the report's style (`report.css`) into one
 * IIFE that `report/report-file.ts` inlines: it draws the page from its data block
 * (`<script type="application/json" id="lab-data">`) into `#report`. The bundle's exports are the
 * global `labUi`, so the page can be drawn again (`labUi.renderSections(root, data)`).
 */
import 'uplot/dist/uPlot.min.css';
import './report.css';
import { renderSections } from './render-sections';
import type { ReportData } from './report-data';

export { renderSections };

const data = JSON.parse(document.getElementById('lab-data')!.textContent!) as ReportData;
renderSections(document.getElementById('report')!, data);
